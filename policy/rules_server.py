"""Rules over what a GPU InferenceService's model server admits: the revision timeout, the input and batch caps
the runtime enforces, and the server's own admission limit against what the queue-proxy sends or the scaler's
target (guides 000, 001, 004)."""

from __future__ import annotations

import math
from typing import Iterator

from policy.registry import rule
from policy.bounds import autoscaler_behavior, concurrency_target, hpas_for
from policy.resources import (ANN, BATCH_CAP_ANNOTATIONS, BATCH_CAP_FLAGS, INPUT_CAP_ANNOTATIONS, INPUT_CAP_FLAGS,
                              MANDATORY, SCALED_OBJECT_TYPE, Context, Resource, _has_flag, _list, _map, all_args_env,
                              annotations, deployment_mode, fmt, is_gpu_isvc, num, predictor)
from simulation.autoscaler.hpa import HpaSpec, tolerance_value
from simulation.autoscaler.promql import IN_FLIGHT_GAUGES
from validation.annotations import ENGINE_ANNOTATION
from validation.defaults import KNATIVE_DEFAULT_TIMEOUT_S, TGI_DEFAULT_MAX_CONCURRENT_REQUESTS
from validation.kubernetes import KNATIVE_MAX_TIMEOUT_S


# The fastest GPU node launch the cold-start priors allow (README `coldStart`: nodeProvisionS uniform 60–180 s,
# stackconfig.platform.COLD_START_DEFAULTS; ../shared/reference/knative-kserve.md §6), kept here as a number so the
# pack needs no stack config: what a request that wakes a scaled-to-zero revision waits at least, besides the model
# load, once the cluster-autoscaler has removed the idle node.
NODE_PROVISION_MIN_S = 60.0


@rule("isvc-timeout", MANDATORY,
      "Knative revision timeout >= the service's p99 latency SLO and <= Knative's 600 s; with minReplicas 0, >= "
      "its cold start (model load + the fastest node launch, 60 s)",
      "001 §8, §10-4; 004 §4", is_gpu_isvc)
def _timeout(res: Resource, ctx: Context) -> Iterator[str]:
    """The p99 bound compared is the SLO (`preflight.kserve.io/slo-p99-latency-seconds`), not a latency estimate:
    a timeout below it lets the SLO accept latencies the queue-proxy cuts with 504, so the timeout, not the SLO,
    is the service's real limit. Mandatory even where the gate predicts a p99 below the timeout: the pack gives
    one verdict wherever it runs (CrossGuard and `gate.enabled: false` have no prediction), the gate checks the
    SLO and not the timeout, and the fix costs nothing: a team that wants to fail fast lowers the SLO to the
    timeout, and the gate then checks the predicted p99 against that.

    A revision that scales to zero (minReplicas 0; KServe overwrites min-scale from it) holds the request that
    wakes it at the activator, which cuts it at timeoutSeconds with 504 `activator request timeout`
    (knative-kserve.md §2; guide 001 §8: a 60 s cold start behind a 30 s timeout). Its cold start is the pod's
    start and model load (`expected-load-seconds`, the 95th percentile the startup probe is sized by) and, once
    the idle GPU node is gone, a new node (NODE_PROVISION_MIN_S at the fastest) and the image pull on top."""
    if deployment_mode(res) != "Knative":
        return
    raw = num(predictor(res).get("timeout"))
    timeout = KNATIVE_DEFAULT_TIMEOUT_S if raw is None else raw
    shown = f"{timeout:g} s" + (" (Knative's default)" if raw is None else "")
    p99 = num(annotations(res).get(ANN + "slo-p99-latency-seconds"))
    if timeout > KNATIVE_MAX_TIMEOUT_S:
        yield (f"{res.label}: timeout is {shown}, above Knative's max-revision-timeout-seconds "
               f"({KNATIVE_MAX_TIMEOUT_S} s); the revision is rejected. Set spec.predictor.timeout <= "
               f"{KNATIVE_MAX_TIMEOUT_S} (cap long generations with max new tokens instead).")
    if p99 is not None and timeout < p99:
        yield (f"{res.label}: timeout is {shown}, below the p99 latency SLO {p99:g} s "
               f"({ANN}slo-p99-latency-seconds): the SLO accepts requests slower than the timeout, which the "
               "queue-proxy cuts off with 504s, so the timeout, not the SLO, is the real limit. Set "
               f"spec.predictor.timeout between {p99:g} and {KNATIVE_MAX_TIMEOUT_S} s (stack: timeout), or lower "
               f"the SLO (slo.p99LatencyS) to {shown.split(' ')[0]} s if failing fast is intended.")
    load = num(annotations(res).get(ANN + "expected-load-seconds"))
    min_r = num(predictor(res).get("minReplicas"))
    if min_r == 0 and load is not None and timeout < load + NODE_PROVISION_MIN_S:
        needed = math.ceil(load + NODE_PROVISION_MIN_S)
        fix = (f"Set spec.predictor.timeout to at least {needed} s (stack: timeout), or minReplicas >= 1."
               if needed <= KNATIVE_MAX_TIMEOUT_S else
               f"No timeout Knative accepts covers it ({needed} s > {KNATIVE_MAX_TIMEOUT_S} s): set minReplicas >= 1.")
        yield (f"{res.label}: minReplicas is 0, so the request that wakes the revision waits at the activator for a "
               f"cold start: the pod's start and model load ({load:g} s at the 95th percentile, "
               f"{ANN}expected-load-seconds), after a new GPU node once the idle one is removed ("
               f"{NODE_PROVISION_MIN_S:g}-180 s, README coldStart) and its image pull. A timeout of {shown} is "
               f"below {load:g} + {NODE_PROVISION_MIN_S:g} s, so it is cut off with 504 (activator request "
               f"timeout). {fix}")


def _declared(res: Resource, keys: tuple[str, ...]) -> bool:
    return any(str(annotations(res).get(k, "")).strip() for k in keys)


@rule("isvc-input-caps", MANDATORY,
      "An input cap the runtime enforces: its own flag, or Triton's declared config.pbtxt input shape",
      "000 §5, §9.4", is_gpu_isvc)
def _input_caps(res: Resource, ctx: Context) -> Iterator[str]:
    args, _ = all_args_env(res)
    if not (_has_flag(args, INPUT_CAP_FLAGS) or _declared(res, INPUT_CAP_ANNOTATIONS)):
        yield (f"{res.label}: no input cap the runtime enforces, so one long prompt or huge image can take the whole "
               "GPU (CUDA OOM for every request in the batch). Set one: --max-model-len (vLLM), --max-input-tokens/"
               "--max-total-tokens (TGI), or for Triton the input dims in config.pbtxt, declared as "
               f"{INPUT_CAP_ANNOTATIONS[0]} (stack: limits.maxInputTokens / maxImagePixels). "
               "Environment variables such as MAX_INPUT_TOKENS are read by no runtime.")


@rule("isvc-batch-caps", MANDATORY,
      "A batch cap the runtime enforces: its own flag, or Triton's declared config.pbtxt max_batch_size",
      "000 §5, §9.5", is_gpu_isvc)
def _batch_caps(res: Resource, ctx: Context) -> Iterator[str]:
    args, _ = all_args_env(res)
    if not (_has_flag(args, BATCH_CAP_FLAGS) or _declared(res, BATCH_CAP_ANNOTATIONS)):
        yield (f"{res.label}: no batch cap the runtime enforces: the batch is whatever the runtime's default "
               "allows (Triton's dynamic batcher and the Transformers backend until the GPU runs out of memory; vLLM "
               "and TGI their defaults, which the guides' checklist wants stated). Set one: --max-num-seqs (vLLM), "
               "--max-batch-size (TGI), or for Triton max_batch_size in "
               f"config.pbtxt, declared as {BATCH_CAP_ANNOTATIONS[0]} (stack: limits.maxBatchSize). "
               "Environment variables such as MAX_BATCH_SIZE are read by no runtime.")


TGI_MAX_CONCURRENT_FLAGS = ("--max-concurrent-requests", "--max_concurrent_requests")


def _flag_value(args: list[str], flags: tuple[str, ...]) -> float | None:
    """The last value of `--flag=V` or `--flag V` (clap and argparse both take the last)."""
    out = None
    for i, a in enumerate(args):
        for f in flags:
            if a.startswith(f + "="):
                out = num(a.split("=", 1)[1])
            elif a == f and i + 1 < len(args):
                out = num(args[i + 1])
    return out


@rule("isvc-server-admission-limit", MANDATORY,
      "The server's own admission limit (TGI --max-concurrent-requests) admits what the autoscaling needs: "
      "Knative, at least what the queue-proxy sends a pod (containerConcurrency) and the KPA target; Standard, more "
      "than the KEDA/HPA in-flight target × (1 + the HPA's scale-up tolerance)", "004 §5; 000 §4",
      lambda res: is_gpu_isvc(res) and str(annotations(res).get(ENGINE_ANNOTATION, "")) == "tgi", stack=True)
def _server_admission(res: Resource, ctx: Context) -> Iterator[str]:
    """TGI's router answers 429 "Model is overloaded" once `--max-concurrent-requests` requests are inside
    (text-generation-inference router/src: `InferError::Overloaded`). The queue-proxy lets containerConcurrency
    requests through to the pod at once, and the KPA adds pods only when the average per pod passes its target,
    so a lower server limit answers 429s before either would act: certain under the load the service is sized
    for, like a timeout below the p99 (`isvc-timeout`). Guide 004: fix the server's concurrency limit first, then
    set the autoscaler's target to it. Standard mode has no queue-proxy: the scaler (a KEDA ScaledObject on TGI's
    `tgi_queue_size` + `tgi_batch_current_size`, or an HPA Pods metric of in-flight requests) averages what the
    pods hold, which the limit caps, and the HPA adds a pod only when that average passes target × (1 +
    tolerance) (replica_calculator.go, `Tolerances.isWithin`): a limit at or below it never scales out."""
    args, _ = all_args_env(res)
    limit = _flag_value(args, TGI_MAX_CONCURRENT_FLAGS)
    shown = f"{fmt(limit)}" if limit is not None else f"{TGI_DEFAULT_MAX_CONCURRENT_REQUESTS} (TGI's default)"
    limit = TGI_DEFAULT_MAX_CONCURRENT_REQUESTS if limit is None else limit
    if deployment_mode(res) == "Standard":
        for hpa in hpas_for(res, ctx):
            for target in in_flight_targets(hpa):
                tolerance = scale_up_tolerance(hpa)
                if limit <= target * (1 + tolerance):
                    yield (f"{res.label}: TGI's --max-concurrent-requests is {shown}, so a pod never holds more "
                           f"than {fmt(limit)} requests, but {hpa.label} adds a pod only when the per-pod average "
                           f"of in-flight requests passes its target {fmt(target)} × (1 + tolerance "
                           f"{tolerance:g}) = {target * (1 + tolerance):g}: the service never scales out and the "
                           f"router answers 429 above {fmt(limit)} a pod. Set scaleTarget to at most "
                           f"{max(1, math.ceil(limit / (1 + tolerance)) - 1)}, or limits.maxConcurrentRequests to "
                           f"at least {math.floor(target * (1 + tolerance)) + 1} (stack).")
        return
    pred = predictor(res)
    cc = num(pred.get("containerConcurrency")) or math.inf   # 0 or unset: the queue-proxy sends without limit
    target = concurrency_target(res)
    sends = max(cc, target or 0)
    if sends > limit:
        yield (f"{res.label}: TGI's --max-concurrent-requests is {shown}, below the "
               f"{'unlimited' if sends == math.inf else fmt(sends)} requests the queue-proxy sends one pod "
               f"(containerConcurrency {fmt(None if cc == math.inf else cc)}, scaleTarget {fmt(target)}), so the "
               "router answers 429 before Knative queues or scales. Set limits.maxConcurrentRequests to at least "
               "containerConcurrency (stack), or lower containerConcurrency and scaleTarget to it.")


# What names a per-pod count of in-flight requests: TGI's gauges (manifests/keda.py) in a KEDA prometheus query; an
# HPA Pods metric named for them (the stack's `hpa.podsMetric` default is `inflight_requests`).
TGI_IN_FLIGHT_GAUGES = IN_FLIGHT_GAUGES["tgi"]
IN_FLIGHT_METRIC_WORDS = ("inflight", "in_flight", "concurren", *TGI_IN_FLIGHT_GAUGES)


def in_flight_targets(hpa: Resource) -> list[float]:
    """The per-pod in-flight targets an HPA or ScaledObject scales on: a KEDA prometheus trigger on TGI's gauges
    with metricType AverageValue (KEDA's default), or an HPA Pods metric of in-flight requests (AverageValue)."""
    spec, out = _map(hpa.props.get("spec")), []
    if hpa.type == SCALED_OBJECT_TYPE:
        for t in map(_map, _list(spec.get("triggers"))):
            meta = _map(t.get("metadata"))
            if (str(t.get("type")) == "prometheus" and str(t.get("metricType") or "AverageValue") == "AverageValue"
                    and any(g in str(meta.get("query", "")) for g in TGI_IN_FLIGHT_GAUGES)):
                out.append(num(meta.get("threshold")))
    else:
        for m in map(_map, _list(spec.get("metrics"))):
            pods = _map(m.get("pods"))
            name = str(_map(pods.get("metric")).get("name", "")).lower()
            if str(m.get("type")) == "Pods" and any(w in name for w in IN_FLIGHT_METRIC_WORDS):
                out.append(num(_map(pods.get("target")).get("averageValue")))
    return [t for t in out if t is not None and t > 0]


def scale_up_tolerance(hpa: Resource) -> float:
    """`behavior.scaleUp.tolerance` (KEP-4951), else the controller's --horizontal-pod-autoscaler-tolerance."""
    own = tolerance_value(_map(autoscaler_behavior(hpa).get("scaleUp")).get("tolerance"))
    return HpaSpec().tolerance if own is None else own
