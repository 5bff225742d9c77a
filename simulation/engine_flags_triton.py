"""Triton Inference Server's command line (`tritonserver`), read as it reads it: the `runtime.args` check for engine
`triton` (`simulation/engine_flags.py` `read_args` hands Triton's args here, and holds the gRPC port to the ports
the pod already uses, `pod_ports.taken_ports`, as it does every server's).

Sources: triton-inference-server/server `src/command_line_parser.cc` (`TritonParser::SetupOptions` for the names
and value kinds, `Parse` for how each value is read and the checks after parsing, `CheckPortCollision`), at the
release tags v2.34.0 (container 23.05) to v2.71.0 for when a flag appeared (`build.py`: 2.34.0 is 23.05, 2.40.0
23.11, 2.42.0 24.01, 2.46.0 24.05, 2.47.0 24.06, 2.56.0 25.03, 2.57.0 25.04, 2.59.0 25.06, 2.68.0 26.04); KServe
`config/runtimes/kserve-tritonserver.yaml` (the runtime starts `tritonserver --model-store=/mnt/models
--grpc-port=9000 --http-port=8080 --allow-grpc=true --allow-http=true` and tells Prometheus to scrape port 8002)
and `config/runtimes/kustomization.yaml` (its image `nvcr.io/nvidia/tritonserver:23.05-py3`, KServe 0.15–0.20).

How Triton reads its command line:
- KServe appends `runtime.args` to the runtime's own args (stackconfig/runtimes.py), so a user's flag comes last
  and, for a setting Triton keeps one value of, wins: `--http-port=8000` moves the server off 8080, where the
  probes and Knative's queue-proxy connect. `--model-repository`/`--model-store` and `--load-model` add to a set.
- glibc `getopt_long` with no short options: `--flag=value` or `--flag value` (the next argument, whatever it
  starts with); `--help` and `--disable-auto-complete-config` take no value. An unknown option, a short one, a
  missing value, a value on a switch or an ambiguous abbreviation is '?', and `Parse` throws: tritonserver prints
  its usage and exits, so the pod crash-loops. A non-option argument is permuted to the end and refused
  ('Unexpected argument'); `--` ends the options. getopt also takes an unambiguous abbreviation (`--http-p`): the
  stack refuses it, naming the flag, since it checks flags by their full name.
- Values: as `Parse` reads each (simulation/triton_flag_values.py).
- After parsing: `--load-model` without `--model-control-mode=explicit` throws; so do two enabled endpoints (HTTP,
  gRPC, metrics) on one address and port (`CheckPortCollision`).

The flags and what the stack accepts of each: simulation/triton_flag_table.py.
Flags added after 23.05 are refused on an image older than the release that added them (Triton exits on an
unknown option); without `runtime.image` the pod runs KServe's 23.05 image. Images older than 23.05 are read as
23.05.
"""

from __future__ import annotations

from typing import Any

from simulation.triton_flag_table import ADDITIVE, FLAGS, HTTP_PORT, METRICS_PORT
from simulation.triton_flag_values import release_name, release_of

_SOURCE = "command_line_parser.cc"
_EXITS = "tritonserver exits with its usage and the pod crash-loops"


def triton_reading(args: list[str] | tuple, image: str | None = None) -> tuple[list[tuple[str, str]],
                                                                                  list[tuple[str, int]]]:
    """(the arg as given, why) for each of `args` Triton refuses or the stack does not accept (module docstring);
    and (the arg as given, its port) for the listener Triton opens beside HTTP and metrics (gRPC, when enabled),
    which the caller holds to the ports the pod already uses (`pod_ports.taken_ports`)."""
    out: list[tuple[str, str]] = []
    given: list[tuple[str, str, Any]] = []          # (name, arg as given, value) of the flags read
    release, args, i = release_of(image), list(args), 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            out += [(rest, f"expected no argument after '--': {_positional()}") for rest in args[i:]]
            break
        if not arg.startswith("--"):
            out.append((arg, "expected a --flag" + (": Triton has no short options ('invalid option'), so "
                                                    f"{_EXITS}" if arg.startswith("-") and arg != "-"
                                                    else f": {_positional()}")))
            continue
        name, eq, text = arg.partition("=")
        flag = FLAGS.get(name)
        if flag is None:
            if not eq and i < len(args) and not args[i].startswith("-"):   # its value, if it takes one: one problem
                arg, i = f"{arg} {args[i]}", i + 1
            out.append((arg, _unknown(name)))
            continue
        if flag.parse is None:
            if eq:
                out.append((arg, f"expected {name} alone: it takes no value and getopt_long refuses one "
                                 f"('doesn't allow an argument'), so {_EXITS}"))
            elif flag.refused:
                out.append((arg, f"expected no {name}: {flag.refused}"))
            continue
        if not eq:
            if i >= len(args):
                out.append((arg, f"expected a value after {name}, {flag.expects}: getopt_long refuses the option "
                                 f"without its argument, so {_EXITS}"))
                continue
            text, arg = args[i], f"{arg} {args[i]}"
            i += 1
        if flag.since and (release is None or release < flag.since):
            runs = f"Triton {release_name(release)}" if release else f"{image}, which names no Triton release (YY.MM)"
            out.append((arg, f"expected a flag the server knows: {name} first appears in Triton "
                             f"{release_name(flag.since)} ({_SOURCE}), and the pod runs {runs}"
                             + (" (KServe's kserve-tritonserver image without runtime.image)" if not image else "")
                             + f"; an older tritonserver does not know it, so {_EXITS}. Name an image of "
                               f"{release_name(flag.since)} or later in runtime.image (tagged YY.MM), or drop the "
                               "flag"))
            continue
        if flag.refused:
            out.append((arg, f"expected no {name}: {flag.refused}"))
            continue
        try:
            value = flag.parse(text)
        except ValueError:
            out.append((arg, f"expected {flag.expects} for {name}: Triton refuses {text!r}, so {_EXITS}"))
            continue
        if flag.judge is not None and (why := flag.judge(value, release)):
            out.append((arg, why))
            continue
        if flag.accepts is not None and not flag.accepts(value) and name in ADDITIVE:
            out.append((arg, flag.why))
            continue
        given.append((name, arg, value))
    last = {name: (arg, value) for name, arg, value in given}   # a setting Triton keeps: the last one given
    out += [(arg, FLAGS[name].why) for name, (arg, value) in last.items()
            if name not in ADDITIVE and FLAGS[name].accepts is not None and not FLAGS[name].accepts(value)]
    given = [(name, arg, value) for name, arg, value in given if name in ADDITIVE or last[name][0] == arg]
    problems, ports = _after_parsing(given)
    return out + problems, ports


def _after_parsing(given: list[tuple[str, str, Any]]) -> tuple[list[tuple[str, str]], list[tuple[str, int]]]:
    """Checks across flags, on the values Triton keeps: the last of each (KServe's runtime args come first); and
    the gRPC listener's port, when gRPC is on and Triton's own check (`CheckPortCollision`) passes."""
    last = {name: (arg, value) for name, arg, value in given}
    mode_arg, mode = last.get("--model-control-mode", (None, "none"))
    loads = [(arg, value) for name, arg, value in given if name == "--load-model"]
    out = []
    if mode != "explicit":
        out += [(arg, "expected --model-control-mode=explicit with it, or no --load-model: Triton exits at start-up "
                      "('Use of --load-model requires setting --model-control-mode=explicit as well', "
                      f"{_SOURCE} Parse), so the pod crash-loops") for arg, _ in loads]
    elif not loads:
        out.append((mode_arg, "expected --load-model=* or --load-model=<the model's name> with it, or "
                              "--model-control-mode=none (the default): in explicit mode Triton loads only the models "
                              "--load-model names, none without one, and /v2/health/ready still answers 200 (every "
                              "loaded model is ready), so the pod is Ready and every request fails (model not found)"))
    elif "*" in {value for _, value in loads} and len({value for _, value in loads}) > 1:
        out += [(arg, "expected --load-model=* alone, or named models without it: Triton refuses * beside another "
                      "--load-model ('Specifying --load-model=* in conjunction with another --load-model argument "
                      f"will result in error', {_SOURCE}), so it does not start")
                for arg, value in loads if value != "*"]
    else:
        names = list(dict.fromkeys(value for _, value in loads))
        out += [(arg, f"expected one model, {names[0]!r}: Triton loads every model --load-model names onto the "
                      f"GPU ({', '.join(map(repr, names))}), and the simulation serves one model per pod, the "
                      "service's (its memory, batching and start-up)")
                for arg, value in loads if value in names[1:] and arg == next(a for a, v in loads if v == value)]
    grpc_on, ports = last.get("--allow-grpc", (None, True))[1], []
    if "--grpc-port" in last and grpc_on and last["--grpc-port"][1] in (HTTP_PORT, METRICS_PORT):
        arg, port = last["--grpc-port"]
        out.append((arg, f"expected a port other than {HTTP_PORT} (HTTP) and {METRICS_PORT} (metrics), or "
                         f"--allow-grpc=false: Triton refuses two endpoints on one address and port {port} "
                         f"(CheckPortCollision), so {_EXITS}"))
    elif "--grpc-port" in last and grpc_on:
        ports.append(last["--grpc-port"])
    return out, ports


def _positional() -> str:
    return (f"Triton takes no positional argument ('Unexpected argument', {_SOURCE} Parse), so {_EXITS}; give a "
            "value with its flag (--flag=value)")


def _unknown(name: str) -> str:
    stem = name[2:]
    matches = sorted(n for n in FLAGS if n[2:].startswith(stem)) if stem else []
    if matches:
        return (f"expected the flag's full name ({', '.join(matches)}): getopt_long reads an abbreviation as the one "
                "flag it starts (and exits on an ambiguous one), and the stack checks flags by their full name")
    accepted = sorted(n for n, f in FLAGS.items() if not f.refused)
    return (f"expected a flag tritonserver knows that the stack accepts ({', '.join(accepted)}): getopt_long does "
            f"not know {name} ('unrecognized option'), so {_EXITS}")
