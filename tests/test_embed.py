import numpy as np
import pytest

from sampleaudit.embed import EmbeddingCache, cache_key, default_cache_dir, embed_texts
from sampleaudit.embed.hashing import HashingEmbedder


class CountingEmbedder:
    """Wraps an embedder and records every text it is asked to encode."""

    def __init__(self, inner):
        self.inner, self.seen = inner, []
        self.model_id, self.dim, self.device, self.precision = inner.model_id, inner.dim, inner.device, inner.precision

    def encode(self, texts):
        self.seen.extend(texts)
        return self.inner.encode(texts)


def test_hashing_embedder_is_deterministic_and_normalised():
    a = HashingEmbedder(64).encode(["the same text", "other words"])
    b = HashingEmbedder(64).encode(["the same text", "other words"])
    assert a.dtype == np.float32 and a.shape == (2, 64)
    assert np.array_equal(a, b)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0)


def test_each_distinct_text_embedded_once():
    emb = CountingEmbedder(HashingEmbedder(32))
    out = embed_texts(["a b c", "x y z", "a b c", "a b c"], emb)
    assert emb.seen == ["a b c", "x y z"]
    assert np.array_equal(out[0], out[2]) and out.shape == (4, 32)


def test_cache_means_nothing_is_embedded_twice(tmp_path):
    cache = EmbeddingCache(tmp_path / "c")
    emb = CountingEmbedder(HashingEmbedder(32))
    first = embed_texts(["baseline one", "baseline two"], emb, cache=cache)
    second = embed_texts(["baseline two", "new checkpoint text", "baseline one"], emb, cache=cache)
    assert emb.seen == ["baseline one", "baseline two", "new checkpoint text"]
    assert np.array_equal(second[0], first[1]) and np.array_equal(second[2], first[0])
    assert (tmp_path / "c" / "embeddings.sqlite").exists()


def test_cache_is_keyed_by_model(tmp_path):
    cache = EmbeddingCache(tmp_path)
    small, big = CountingEmbedder(HashingEmbedder(16)), CountingEmbedder(HashingEmbedder(32))
    embed_texts(["t"], small, cache=cache)
    assert embed_texts(["t"], big, cache=cache).shape == (1, 32)
    assert big.seen == ["t"]


def test_cache_location_env(monkeypatch, tmp_path):
    monkeypatch.setenv("SAMPLEAUDIT_CACHE_DIR", str(tmp_path / "here"))
    assert default_cache_dir() == tmp_path / "here"
    monkeypatch.delenv("SAMPLEAUDIT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "sampleaudit"


def test_unicode_and_empty_texts_cache(tmp_path):
    cache = EmbeddingCache(tmp_path)
    emb = HashingEmbedder(16)
    texts = ["", "模型", "\ud83d"[:0] + "emoji 🙂"]
    a = embed_texts(texts, emb, cache=cache)
    b = embed_texts(texts, emb, cache=cache)
    assert np.array_equal(a, b)


class Tagged(CountingEmbedder):
    """The same model computing in another precision."""

    def __init__(self, inner, precision):
        super().__init__(inner)
        self.precision = precision


def test_fp16_vectors_never_mix_with_fp32(tmp_path):
    cache = EmbeddingCache(tmp_path)
    fp32, fp16 = Tagged(HashingEmbedder(32), "fp32"), Tagged(HashingEmbedder(32), "fp16")
    assert fp32.model_id == fp16.model_id
    embed_texts(["shared text", "another"], fp32, cache=cache)
    embed_texts(["shared text", "another"], fp16, cache=cache)
    assert fp16.seen == ["shared text", "another"]  # not read from the fp32 entries
    assert cache_key(fp16) == "hashing-char-3-5-32|fp16"
    assert set(cache.get_many(cache_key(fp32), ["shared text"])) == {"shared text"}
    again = Tagged(HashingEmbedder(32), "fp16")
    embed_texts(["shared text"], again, cache=cache)
    assert again.seen == []


class NoPrecision:
    def __init__(self):
        inner = HashingEmbedder(16)
        self.model_id, self.dim, self.device, self.encode = inner.model_id, inner.dim, inner.device, inner.encode


def test_embedder_without_precision_is_taken_as_fp32(tmp_path):
    cache = EmbeddingCache(tmp_path)
    assert cache_key(NoPrecision()) == "hashing-char-3-5-16|fp32"
    first = embed_texts(["a"], NoPrecision(), cache=cache)
    emb = CountingEmbedder(HashingEmbedder(16))  # the same model, precision "fp32" declared
    assert np.array_equal(embed_texts(["a"], emb, cache=cache), first) and emb.seen == []


@pytest.mark.parametrize("stored", [np.full(32, 1.0, np.float32), np.zeros(16, np.float32) + 0.25,
                                    np.array([np.nan] + [0.0] * 31, np.float32)])
def test_unsound_cached_vector_is_embedded_again(tmp_path, stored):
    cache, emb = EmbeddingCache(tmp_path), CountingEmbedder(HashingEmbedder(32))
    cache.put_many(cache_key(emb), {"bad row": stored, "good row": embed_texts(["good row"], emb)[0]})
    emb.seen.clear()
    out = embed_texts(["bad row", "good row"], emb, cache=cache)
    assert emb.seen == ["bad row"]
    assert np.array_equal(out[0], embed_texts(["bad row"], HashingEmbedder(32))[0])
    assert np.array_equal(cache.get_many(cache_key(emb), ["bad row"])["bad row"], out[0])  # replaced in the cache


def test_zero_vector_of_an_empty_text_comes_from_the_cache(tmp_path):
    cache, emb = EmbeddingCache(tmp_path), CountingEmbedder(HashingEmbedder(32))
    first = embed_texts([""], emb, cache=cache)
    assert not first.any()
    assert np.array_equal(embed_texts([""], emb, cache=cache), first) and emb.seen == [""]
