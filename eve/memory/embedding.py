"""The local embedding model of semantic memory search: WordLlama, whose wheel ships its
weights and tokenizer, so embedding needs no network and no key.

WordLlama 0.3.9 ships both files but looks for the tokenizer under a folder name it does not
ship (``tokenizer/`` for ``tokenizers/``) and then downloads it; eve loads the two shipped
files itself instead (``WordLlama.load(disable_download=True)`` would fail here). Loaded
once per process on first use: about 16 MB, well under a second.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eve.errors import MemorySearchUnavailable

if TYPE_CHECKING:
    import numpy as np

#: the shipped model: 256 dimensions of the ``l2_supercat`` vocabulary
MODEL = "l2_supercat"
DIMENSIONS = 256
_INSTALL = "pip install 'eve-durable[memory-semantic]'"


@functools.cache
def _model() -> Any:
    try:
        import wordllama
        from safetensors import safe_open
        from wordllama import WordLlama
        from wordllama.inference import WordLlamaInference
    except ImportError as error:
        raise MemorySearchUnavailable(
            f"semantic memory search needs the WordLlama model ({_INSTALL}): {error}"
        ) from None
    package = Path(wordllama.__file__).parent
    weights = package / "weights" / f"{MODEL}_{DIMENSIONS}.safetensors"
    tokenizer = package / "tokenizers" / f"{MODEL}_tokenizer_config.json"
    if not (weights.exists() and tokenizer.exists()):
        raise MemorySearchUnavailable(
            f"this wordllama ({getattr(wordllama, '__version__', '?')}) does not ship its "
            f"model files; install the version eve names ({_INSTALL})"
        )
    with safe_open(str(weights), framework="np", device="cpu") as handle:
        table = handle.get_tensor("embedding.weight")
    return WordLlamaInference(table, WordLlama.load_tokenizer(tokenizer), binary=False)


def embed(texts: list[str]) -> np.ndarray[Any, Any]:
    """Unit-length float32 vectors of ``texts``, one row each (cosine = dot product)."""
    import numpy as np

    vectors = np.asarray(_model().embed(texts), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: np.ndarray[Any, Any] = vectors / np.maximum(norms, 1e-12)
    return unit


def to_bytes(vector: np.ndarray[Any, Any]) -> bytes:
    return vector.astype("<f4").tobytes()


def matrix(blobs: list[bytes]) -> np.ndarray[Any, Any]:
    """Stored vectors (``to_bytes``) as one row each."""
    import numpy as np

    return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), DIMENSIONS)


def nearest(
    query: np.ndarray[Any, Any], vectors: np.ndarray[Any, Any], limit: int
) -> list[tuple[int, float]]:
    """The rows of ``vectors`` nearest ``query`` (at most ``limit``), with their cosine."""
    import numpy as np

    if len(vectors) == 0:
        return []
    scores = vectors @ query.astype(np.float32)
    count = min(limit, len(vectors))
    top = np.argpartition(-scores, count - 1)[:count]
    ordered = top[np.argsort(-scores[top])]
    return [(int(i), float(scores[i])) for i in ordered]
