"""The ports a pod already listens on, which every server's second listener must stay off (`taken_ports`)."""

from __future__ import annotations

from validation.defaults import SERVING_PORT

# Where the server must listen: the port the stack renders and probes (manifests/inference_service.py SERVER_PORT,
# KServe's default --http_port), the only container port the stack renders; in Knative mode also the ports
# Knative's queue-proxy takes in the same pod (Knative's reserved ports, serving pkg/apis/serving/k8s_validation.go:
# 8012/8013 serving, 8022 admin, 9090/9091 metrics, 8008 profiling; 8112 its TLS port, pkg/networking/constants.go).
# Standard (RawDeployment) mode runs no queue-proxy. Another listener on a taken port fails to bind (`taken_ports`).
HTTP_PORT = SERVING_PORT
QUEUE_PROXY_PORTS = (8008, 8012, 8013, 8022, 8112, 9090, 9091)


def taken_ports(mode: str) -> tuple[int, ...]:
    """The ports a pod of this deployment mode (Knative or Standard) already listens on, which every server's
    second listener (KServe's --grpc_port, TGI's --prometheus-port, Triton's --grpc-port …) must stay off: the
    serving port, and in Knative mode the queue-proxy's."""
    return (HTTP_PORT,) + (QUEUE_PROXY_PORTS if mode == "Knative" else ())


def port_problem(arg: str, port: int, mode: str) -> tuple[str, str] | None:
    """(the arg as given, why) when the listener `arg` opens on `port` is taken in a pod of `mode`, else None."""
    if port not in taken_ports(mode):
        return None
    queue = (f" and the queue-proxy's own ({', '.join(map(str, QUEUE_PROXY_PORTS))}, Knative's reserved ports)"
             if mode == "Knative" else " (Standard mode runs no queue-proxy)")
    return (arg, f"expected a port, 0 to 65535, other than {HTTP_PORT} (the server's HTTP port, where the probes"
                 f"{', the queue-proxy' if mode == 'Knative' else ''} and the Service reach it){queue}: a second "
                 f"listener on {port}, which the pod already uses in {mode} mode, fails to bind and the pod never "
                 "turns Ready")
