#!/usr/bin/env bash
# Look at a report as a person would: screenshot report.html with headless Chromium (cut into
# page-sized PNG tiles) and render every page of report.pdf to PNG with pdftoppm.
#
# usage: scripts/snapshot_report.sh [REPORT_DIR] [PNG_DIR]
#   REPORT_DIR  folder holding report.html (and report.pdf); when it has no report.html, the demo
#               is audited into it first (`sampleaudit demo --format json,html,pdf`).
#               Default: reports/demo
#   PNG_DIR     where the PNGs go (default: REPORT_DIR/snapshots)
# needs: chromium (apt-get install chromium), pdftoppm (poppler-utils), Python with Pillow (a
# matplotlib dependency); $PYTHON picks the interpreter (default: python on PATH).
# Chromium runs offline: no sandbox, no GPU, no network services, a throw-away profile.
set -euo pipefail
cd "$(dirname "$0")/.."

REPORT_DIR=${1:-reports/demo}
PNG_DIR=${2:-$REPORT_DIR/snapshots}
PYTHON=${PYTHON:-$(command -v python || command -v python3)}
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
WIDTH=${WIDTH:-1280}
HEIGHT=${HEIGHT:-40000}   # tall enough for the whole page; blank space below is trimmed
TILE=${TILE:-1600}

if [[ ! -f "$REPORT_DIR/report.html" ]]; then
  echo "no $REPORT_DIR/report.html: auditing the demo into $REPORT_DIR" >&2
  "$PYTHON" -m sampleaudit demo --out "$REPORT_DIR" --format json,html,pdf --quiet
fi
mkdir -p "$PNG_DIR"
rm -f "$PNG_DIR"/html-*.png "$PNG_DIR"/pdf-*.png

if [[ -n "$CHROMIUM" ]]; then
  PROFILE=$(mktemp -d)
  trap 'rm -rf "$PROFILE"' EXIT
  "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$PROFILE" --hide-scrollbars \
    --window-size="$WIDTH,$HEIGHT" --screenshot="$PNG_DIR/html-full.png" \
    "file://$(realpath "$REPORT_DIR/report.html")" 2>/dev/null
  # Trim the blank space below the page, then cut it into tiles a screen high.
  "$PYTHON" - "$PNG_DIR/html-full.png" "$TILE" <<'PY'
import sys
from PIL import Image, ImageChops

path, tile = sys.argv[1], int(sys.argv[2])
img = Image.open(path).convert("RGB")
bbox = ImageChops.difference(img, Image.new("RGB", img.size, (255, 255, 255))).getbbox()
bottom = min(img.height, (bbox[3] if bbox else img.height) + 40)
for i, top in enumerate(range(0, bottom, tile), start=1):
    img.crop((0, top, img.width, min(top + tile, bottom))).save(path.replace("html-full", f"html-{i:02d}"))
img.crop((0, 0, img.width, bottom)).save(path)
print(f"{path}: {img.width}x{bottom} px, {(bottom + tile - 1) // tile} tiles")
if bbox and bbox[3] >= img.height - 1:
    print(f"warning: the page may be longer than {img.height} px; set HEIGHT higher", file=sys.stderr)
PY
else
  echo "chromium not found (apt-get install chromium): HTML screenshots skipped" >&2
fi

if [[ -f "$REPORT_DIR/report.pdf" ]]; then
  pdftoppm -r "${DPI:-70}" -png "$REPORT_DIR/report.pdf" "$PNG_DIR/pdf"
  echo "$PNG_DIR/pdf-*.png: $(ls "$PNG_DIR"/pdf-*.png | wc -l) pages"
else
  echo "no $REPORT_DIR/report.pdf: PDF pages skipped (render with --format json,html,pdf)" >&2
fi
ls "$PNG_DIR"
