"""Pure metric functions: arrays and texts in, typed results out. No I/O, no model loading."""
