"""Starting workers: on this machine (``--workers N``) or under a launcher.

Under ``mpirun``/``srun`` every process finds its rank and the world size in the
environment (Open MPI, MPICH/Intel MPI PMI, Slurm) and the rendezvous address in
``--rendezvous`` or ``TUX2_RENDEZVOUS``. ``--workers N`` without a rank starts N
local worker processes on loopback and supervises them: when one exits with
an error or dies, the launcher names it, gives the others ``grace`` seconds
to stop on their own (a failing worker tells them why), kills the rest and
returns non-zero; workers die with the launcher. The launcher hands its workers
a random secret (``TUX2_SECRET``, unless one is set): their sockets admit only
connections that know it (tux2.zmq_transport).
"""
import ctypes
import ipaddress
import os
import random
import re
import secrets
import signal
import socket
import subprocess
import sys
import time

from tux2 import files, interrupt
from tux2.errors import Tux2Error

ENV_RANK = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")
ENV_SIZE = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")


def world_from(rank=None, world=None, rendezvous=None, environ=None):
    """(rank, world, rendezvous) from flags, else from launcher variables; None if not distributed."""
    env = os.environ if environ is None else environ
    if rank is None:
        for k in ENV_RANK:
            if k in env:
                rank = int(env[k])
                break
    if world is None:
        for k in ENV_SIZE:
            if k in env:
                world = int(env[k])
                break
    rendezvous = rendezvous or env.get("TUX2_RENDEZVOUS")
    if rank is None and world is None:
        return None
    if rank is None or world is None:
        raise Tux2Error("a distributed worker needs both its rank and the world size "
                        "(--rank/--world or a launcher's environment)")
    if not 0 <= rank < world:
        raise Tux2Error(f"rank {rank} is outside a world of {world} workers")
    if world > 1 and not rendezvous:
        raise Tux2Error("a distributed worker needs --rendezvous tcp://HOST:PORT (rank 0 binds it) "
                        "or TUX2_RENDEZVOUS")
    return rank, world, rendezvous


def ephemeral_ports():
    """The kernel's range of source ports for outgoing connections (Linux), else IANA's."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(v) for v in f.read().split())
        return lo, hi
    except (OSError, ValueError):
        return 49152, 65535


def free_port(host="127.0.0.1", tries=200):
    """A port free on ``host`` now, for a rendezvous that another process binds later.

    Taken below the kernel's source-port range and below ZeroMQ's random data ports
    (49152 and up): a worker that connects to the rendezvous before rank 0 has bound
    it gets a source port from that range, and on loopback a source port equal to the
    destination connects the socket to itself (TCP simultaneous open), which holds the
    port and fails rank 0's bind. Falls back to a kernel-chosen port."""
    lo = 10000
    hi = min(ephemeral_ports()[0], 49152) - 1
    pick = random.SystemRandom()
    for _ in range(tries if hi > lo else 0):
        port = pick.randint(lo, hi)
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def is_loopback(host):
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def interface_to(host):
    """The local address of the interface that reaches ``host``: 127.0.0.1 for a
    loopback host, all interfaces for a wildcard one."""
    if is_loopback(host):
        return "127.0.0.1"
    if host in ("*", "0.0.0.0"):
        return "0.0.0.0"
    try:
        family, _, _, _, addr = socket.getaddrinfo(host.strip("[]"), 9, socket.AF_INET, socket.SOCK_DGRAM)[0]
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect(addr)             # UDP: picks the route, sends nothing
            return s.getsockname()[0]
    except (OSError, UnicodeError) as e:        # UnicodeError: a label over 63 characters (IDNA)
        raise Tux2Error(f"cannot find the interface that reaches the rendezvous host {host}: {e}; "
                        f"give --bind ADDRESS") from None


def connect(rank, world, rendezvous, parts, *, timeout=30.0, bind=None, advertise=None, curve=None, secret=None,
            options=None, max_frame_mb=2048):
    """This worker's ZmqTransport: bound to ``bind`` (default: the interface that
    reaches the rendezvous host), reachable as ``advertise`` (default: the bind
    address, or this host's name when binding 0.0.0.0), authenticated by ``secret``
    (default: TUX2_SECRET) or CURVE keys in ``curve``. Rank 0 warns when the traffic
    is open to others."""
    from tux2.zmq_transport import ZmqTransport
    if not 0 < max_frame_mb < 1 << 40:
        raise Tux2Error(f"--max-frame-mb must be a positive number of megabytes, not {max_frame_mb}")
    bind = bind or interface_to(rendezvous.split("://", 1)[-1].rsplit(":", 1)[0])
    secret = os.environ.get("TUX2_SECRET", "").encode() if secret is None else secret
    if not is_loopback(bind) and not curve and rank == 0:
        risk = ("authenticated (TUX2_SECRET) but not encrypted: anyone on the network can read the model as it "
                "trains" if secret else "neither encrypted nor authenticated: anyone on the network can read "
                "the model as it trains and slow the run down with junk")
        print(f"tux2: warning: worker traffic on {bind} is {risk}; use --curve DIR (made by 'tux2 keys DIR')",
              file=sys.stderr, flush=True)
    elif not secret and not curve and rank == 0:
        print("tux2: warning: workers without TUX2_SECRET or --curve take connections from anyone who can reach "
              "their ports on this host (a stranger can stop the run at the rendezvous or fill a worker's "
              "memory); export the same TUX2_SECRET for every worker ('tux2 run --workers N' does it itself)",
              file=sys.stderr, flush=True)
    return ZmqTransport(rank, world, rendezvous, parts, timeout=timeout, connect_timeout=max(4 * timeout, 10.0),
                        bind_host=bind, advertise_host=advertise or (bind if bind != "0.0.0.0" else socket.getfqdn()),
                        curve=curve, secret=secret, options=options, max_frame=int(max_frame_mb * (1 << 20)))


def die_with_parent():
    """This process gets SIGTERM when the one that started it ends (Linux)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
    except OSError:
        pass


def strip_option(argv, name):
    """argv without ``name VALUE`` / ``name=VALUE``."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == name:
            skip = True
        elif not a.startswith(name + "="):
            out.append(a)
    return out


def launch_local(argv, workers, timeout=30.0, grace=2.0):
    """Run ``tux2 <argv>`` as ``workers`` processes on loopback; return the exit code."""
    rendezvous, said = f"tcp://127.0.0.1:{free_port()}", files.scratch_dir("launch")
    env = {**os.environ, "TUX2_SECRET": os.environ.get("TUX2_SECRET") or secrets.token_hex(16),
           interrupt.LOCAL_WORKER: said}
    procs = []
    try:
        # A terminal's Ctrl-C reaches the workers too: one still starting (Python's site, the imports
        # before tux2.cli.main) printed KeyboardInterrupt's traceback. They start with SIGINT blocked
        # (inherited through exec) until tux2.interrupt.install takes it, which then acts on it.
        with interrupt.sigint_blocked():
            for r in range(workers):
                cmd = [sys.executable, "-m", "tux2.cli", *argv, "--rank", str(r), "--world", str(workers),
                       "--rendezvous", rendezvous, "--timeout", str(timeout)]
                procs.append(subprocess.Popen(cmd, env=env, preexec_fn=die_with_parent))
        # stopped, it stops them as a terminal's Ctrl-C would: it alone says why (tux2.interrupt)
        first, codes = supervise(procs, grace, stop=signal.SIGINT)
        if first is None:
            return 0
        lines = {}          # each different failure once: workers that read one whole input find one bad line
        for r in [first, *range(workers)]:
            if os.path.exists(os.path.join(said, str(r))):
                line = open(os.path.join(said, str(r)), encoding="utf-8", errors="surrogateescape").read()
                lines.setdefault(re.sub(r"\[worker \d+\] ", "", line, count=1), line)
        if lines:
            print(*lines.values(), sep="\n", file=sys.stderr, flush=True)
        return codes[first] if codes[first] > 0 else 2       # killed by a signal: an error, as the others
    finally:
        files.remove_scratch(said)


def say_error(line, rank=None):
    """Print a command's error ``line`` on stderr, or as a worker of ``launch_local``
    (``rank``) leave it to the launcher, which prints each different one once."""
    said = os.environ.get(interrupt.LOCAL_WORKER)
    if rank is not None and said and os.path.isdir(said):
        files.write_atomic(os.path.join(said, str(rank)), files.text(line))
    else:
        print(line, file=sys.stderr)


def died(code):
    """How a worker process that exited with ``code`` ended: 'died (SIGKILL)' for a signal."""
    return f"died ({signal.Signals(-code).name})" if code < 0 else f"died with exit status {code}"


def by_signal(code):
    """Whether a worker's exit status ``code`` is a signal's: killed (< 0), or stopped by
    SIGTERM or SIGINT, which tux2 takes and exits with 128 + the signal's number."""
    return code < 0 or code in (128 + signal.SIGTERM, 128 + signal.SIGINT)


def supervise(procs, grace=2.0, poll=None, quiet=False, stop=signal.SIGTERM):
    """Wait for worker processes (``poll()`` → exit status or None, ``kill()``,
    ``send_signal()``, ``wait()``): when one fails, name it on stderr (unless ``quiet``) if it
    died of a signal, give the others ``grace`` seconds to stop on their own, then kill the
    rest. ``poll``: called between checks. Stopped itself (Ctrl-C, SIGTERM), it sends them
    ``stop``. Returns (rank of the failure or None, exit statuses): the first to fail, or one
    stopped by a signal (``by_signal``) before the others were killed."""
    codes = [None] * len(procs)
    first = deadline = None
    try:
        while any(c is None for c in codes):
            ended = [r for r, p in enumerate(procs) if codes[r] is None and p.poll() is not None]
            for r in ended:
                codes[r] = procs[r].poll()
            failed = [r for r in ended if codes[r] != 0]
            if failed and (first is None or not by_signal(codes[first])):
                # a worker stopped from outside (killed, SIGTERM) and the peers that lost it (exit status 2),
                # which may end first: the signal's is the failure, whatever the order of the ranks' ends
                was = first
                first = min(failed if was is None else [was, *failed], key=lambda r: (not by_signal(codes[r]), r))
                deadline = deadline if was is not None else time.monotonic() + grace
                if first != was and codes[first] < 0 and not quiet:     # a worker that dies cannot say so itself
                    print(f"tux2: error: worker {first} {died(codes[first])}; stopping the other workers",
                          file=sys.stderr, flush=True)
            if deadline is not None and time.monotonic() > deadline:
                for r, p in enumerate(procs):
                    if codes[r] is None:
                        p.kill()
                        codes[r] = p.wait()
            if poll is not None:
                poll()
            time.sleep(0.05)
    except BaseException:                     # Ctrl-C, SIGTERM: the workers go too
        for p in procs:
            if p.poll() is None:
                p.send_signal(stop)
        # a worker takes it as Ctrl-C (tux2.interrupt), which it may act on only after its
        # first epoch when it came while numba compiled: killed after ``grace`` seconds
        deadline = time.monotonic() + grace
        while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
            time.sleep(0.05)
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        raise
    return first, codes
