"""Triton's `--backend-config` settings, checked as the python backend reads them.

The python backend's settings (python_backend `src/python_be.cc` TRITONBACKEND_Initialize, r23.05 to r26.07)
change neither GPU memory nor scheduling; `shm-default-byte-size` is host shared memory, a region of that size in
/dev/shm per model instance (`src/shm_manager.cc`: 'Unable to initialize shared memory key … to requested size',
and the model does not load). The stack's Triton pod mounts nothing at /dev/shm (kserve-tritonserver declares no
volume; manifests/inference_service.py mounts a memory emptyDir only for a custom predictor), so it has the
container runtime's 64 MiB (containerd's sandbox /dev/shm, CRI `defaultShmSize`): the region must fit it
(`POD_SHM_BYTES`) and be no smaller than the backend's minimum (4 MiB to r23.08, 1 MiB from r23.09).
"""

from __future__ import annotations

import re
from typing import Any, Callable

from simulation.triton_flag_values import c_int, release_name

MIB = 1 << 20
POD_SHM_BYTES = 64 * MIB    # the pod's /dev/shm: containerd's sandbox default (CRI defaultShmSize), nothing mounted
_LOAD_FAILS = ("the python backend refuses it when it starts, so the model does not load and the pod never becomes "
               "Ready (tritonserver exits under --exit-on-error, its default)")


def backend_setting(text: str) -> tuple[str, str, str]:
    """`ParseBackendConfigOption`: (backend, setting, value) from `<backend>,<setting>=<value>` or `<setting>=<value>`
    (a backend-agnostic one, backend ''): the first ',' ends the backend's name, the first '=' after it the setting's;
    an empty backend, setting or value, or no '=', is a ParseException (tritonserver exits)."""
    comma = text.find(",")
    equals = text.find("=", comma + 1)
    if comma == 0 or equals < 0:
        raise ValueError(text)
    backend, setting, value = text[:max(comma, 0)], text[comma + 1:equals], text[equals + 1:]
    if not setting or not value:
        raise ValueError(text)
    return backend, setting, value


def _long(text: str, low: int, expected: str, setting: str) -> tuple[int | None, str]:
    """`std::stol` of a python backend setting, and why the backend refuses it ("" when it takes it)."""
    try:
        value = c_int(text, 64)
    except ValueError:
        return None, f"expected {expected} for python's {setting} (std::stol): {_LOAD_FAILS}"
    read = f" (std::stol reads {text!r} as {value})" if text.strip().lstrip("+") != str(value) else ""
    return value, "" if value >= low else f"expected {expected} for python's {setting}{read}: {_LOAD_FAILS}"


def _shm_region(text: str, release: tuple[int, int] | None) -> str:
    low = MIB if release is not None and release >= (23, 9) else 4 * MIB
    span = f"an integer from {low} ({low // MIB} MiB) to {POD_SHM_BYTES} ({POD_SHM_BYTES // MIB} MiB)"
    value, why = _long(text, low, span, "shm-default-byte-size")
    if why or value is None:
        return why + ("" if release is None or release >= (23, 9) else
                      f" (its minimum is 4 MiB up to Triton 23.08; the pod runs {release_name(release)})")
    if value > POD_SHM_BYTES:
        return (f"expected {span} for python's shm-default-byte-size: the python backend creates a shared-memory "
                "region of that size in /dev/shm for each model instance ('Unable to initialize shared memory key "
                "… to requested size', python_backend shm_manager.cc), and the stack's Triton pod has the container "
                f"runtime's {POD_SHM_BYTES // MIB} MiB /dev/shm (containerd's sandbox default; kserve-tritonserver and "
                "the stack mount no memory emptyDir there), so the model does not load and the pod never becomes "
                "Ready")
    return ""


def _positive(setting: str, low: int = 1) -> Callable[[str, Any], str]:
    return lambda text, release: _long(text, low, f"an integer of at least {low}", setting)[1]


def _region_prefix(text: str, release: Any) -> str:
    if re.fullmatch(r"[A-Za-z0-9_.-]+", text):
        return ""
    return ("expected letters, digits, '_', '.' or '-' for python's shm-region-prefix-name: it names the /dev/shm "
            "regions (shm_open takes no '/', and python_backend 24.xx+ refuses shell characters: 'Invalid shared "
            "memory region name'), so the model does not load")


# The python backend's settings (python_be.cc TRITONBACKEND_Initialize reads these and ignores any other): host
# shared memory, the stub's start-up timeout, its thread pool and message queue — no GPU memory, no scheduling.
BACKEND_SETTINGS: dict[tuple[str, str], Callable[[str, Any], str]] = {
    ("python", "shm-default-byte-size"): _shm_region,
    ("python", "shm-growth-byte-size"): _positive("shm-growth-byte-size"),
    ("python", "stub-timeout-seconds"): _positive("stub-timeout-seconds"),
    ("python", "thread-pool-size"): _positive("thread-pool-size"),
    ("python", "shm_message_queue_size"): _positive("shm_message_queue_size"),
    ("python", "shm-region-prefix-name"): _region_prefix,
}


def backend_problem(value: tuple[str, str, str], release: tuple[int, int] | None) -> str:
    """Why the stack refuses a `--backend-config` setting ("" when it takes it): `BACKEND_SETTINGS`, checked as the
    python backend reads them; any other changes what the simulation does not model, or the stack cannot tell."""
    backend, setting, text = value
    if (backend, setting) in BACKEND_SETTINGS:
        return BACKEND_SETTINGS[backend, setting](text, release)
    checked = ", ".join(f"{b},{s}" for b, s in BACKEND_SETTINGS)
    if setting == "default-max-batch-size":
        why = ("it is the max_batch_size Triton's auto-complete gives a model whose config.pbtxt states none (Triton's "
               "model_configuration.md, 'Default Max Batch Size and Dynamic Batcher'), which the simulation does not "
               "model: it batches at limits.maxBatchSize, the config.pbtxt's max_batch_size")
    elif backend == "python":
        why = ("the python backend reads no such setting and ignores it (python_be.cc TRITONBACKEND_Initialize), "
               "so it does not do what it says")
    else:
        why = (f"the stack checks the python backend's settings only, and cannot tell whether "
               f"{backend or 'every backend'}'s {setting} changes GPU memory or batching (tensorflow's "
               "gpu-memory-fraction sizes GPU memory, a backend's default-max-batch-size the batch), which the "
               "simulation does not model; set it in the model's config.pbtxt where it can and declare its caps "
               "under limits")
    return f"expected one of the backend settings the stack checks ({checked}): {why}"
