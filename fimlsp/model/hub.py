"""A model named by its hub id, for the transformers engine: its snapshot in the local hub cache, else downloaded
into it, and a clear error at once where neither can be had (no network, an unknown or gated model)."""

from __future__ import annotations

from pathlib import Path

from fimlsp.model.errors import ModelError, first_line
from fimlsp.model.folder import CONFIG

# Seconds to wait for the hub when a hub id is not in the local cache: enough for a TLS handshake on a slow link,
# short enough that an editor is not left waiting on a silent network.
HUB_TIMEOUT = 3.0

# What a hub model's download takes: its config, tokenizer and safetensors weights, never pickled weights.
HUB_FILES = ["*.json", "*.safetensors", "*.txt", "*.model", "*.tiktoken"]


def hub_snapshot(repo_id: str) -> Path:
    """The folder of the hub model `repo_id`: its snapshot in the local cache, else downloaded into the cache (its
    config, tokenizer and safetensors weights) to be checked before it is built."""
    from huggingface_hub import snapshot_download, try_to_load_from_cache
    from huggingface_hub.utils import disable_progress_bars

    if _hub_cached_or_reachable(repo_id):
        return Path(try_to_load_from_cache(repo_id, CONFIG)).parent
    disable_progress_bars()  # stderr is for errors: an editor shows every line of it as one
    try:
        return Path(snapshot_download(repo_id, allow_patterns=HUB_FILES))
    except Exception as error:  # the hub library's errors vary: HTTP, disk, a missing revision
        raise ModelError(f"cannot download model {repo_id!r} from the hub: {first_line(error)}") from None


def _hub_cached_or_reachable(repo_id: str) -> bool:
    """True if `repo_id` is in the local hub cache, False if it is not but the hub answers; a ModelError naming
    the ways out at once when neither holds, instead of the download's retries (48 s without a network)."""
    from huggingface_hub import constants, model_info, try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError, HfHubHTTPError, RepositoryNotFoundError

    try:
        if isinstance(try_to_load_from_cache(repo_id, CONFIG), str):
            return True
    except HFValidationError as error:
        raise ModelError(f"{repo_id!r} is neither a model folder nor a hub id: {first_line(error)}") from None
    ways_out = (f"give a model folder instead, or put the model in the hub cache ({constants.HF_HUB_CACHE}) on a "
                f"machine with a network: hf download {repo_id}")
    if constants.HF_HUB_OFFLINE:
        raise ModelError(f"model {repo_id!r} is not in the local cache and HF_HUB_OFFLINE is set: {ways_out}")
    try:
        model_info(repo_id, timeout=HUB_TIMEOUT)
    except RepositoryNotFoundError:
        raise ModelError(f"the hub has no model {repo_id!r} (or it is private or gated: hf auth login)") from None
    except HfHubHTTPError:
        pass  # the hub answered: the download says what it finds
    except Exception as error:  # no name resolution, refused, timed out: the HTTP library's errors vary
        raise ModelError(f"model {repo_id!r} is not in the local cache and the hub ({constants.ENDPOINT}) cannot be "
                         f"reached ({first_line(error)}): {ways_out}") from None
    return False
