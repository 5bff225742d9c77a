"""Shared by the GPU model-server tests: a fake pod, a server built from `server:` keys, requests, a log."""

import random

import simpy

from validation.fields import Section
from simulation.request import Request
from simulation.server import get_server


class FakePod:
    """The pod side of the contract: crash() fails everything in flight (502) and records the reason."""

    def __init__(self):
        self.server = None
        self.crashes = []

    def crash(self, reason):
        self.crashes.append(reason)
        self.server.fail_all(502)


def spec_of(kind, data):
    problems = []
    spec = get_server(kind).parse_spec(Section(data, "server", problems), None)
    return spec, problems


def make(kind, data, env=None):
    """(env, pod, server) for `server: {kind, **data}`; asserts the keys are valid."""
    spec, problems = spec_of(kind, data)
    assert not problems, problems
    env = env or simpy.Environment()
    pod = FakePod()
    server = get_server(kind)(env, pod, spec, random.Random(1))
    pod.server = server
    return env, pod, server


def req(i, inp, out):
    return Request(i, i, 0.0, 0, 0.0, inp, out, True)


class Log:
    """on_done that records (status, ttfb, completion time) per request id."""

    def __init__(self, env):
        self.env, self.rows = env, {}

    def __call__(self, r, status, ttfb):
        self.rows[r.id] = (status, ttfb, self.env.now)
