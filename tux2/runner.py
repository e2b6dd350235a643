"""One runner under every ``tux2 run`` and every ``Estimator.fit``: the engine, the
iteration loop with its timing, traffic, progress bar, metrics stream and non-finite
stop, checkpoints and resume, the per-clock trace and the gathered model.

What an algorithm adds is a handful of hooks on its estimator (tux2.estimator):
``prepare(data, parts)`` → ``Setup`` (graph, program, engine options), ``record(eng,
setup)`` → the iteration's metrics, ``read_model(eng, setup)`` → the learned state.
``fit_workers`` runs the same loop in N processes over ZeroMQ on loopback.
"""
import contextlib
import json
import numbers
import os
import signal
import sys
import threading
import time
import warnings

import numpy as np

from tux2 import checkpoint as ckpt
from tux2 import files, interrupt
from tux2.compile import cache_dir, cache_unwritable, counting_compiles
from tux2.config import cores
from tux2.engine import Engine
from tux2.errors import DivergenceError, InputError, PartitionError, Tux2Error
from tux2.graph import BipartiteGraph
from tux2.io import display_name
from tux2.transport import barrier


class Setup:
    """What ``prepare`` hands the runner: the graph (or a distributed ``Shard``), the
    program, ``Engine`` options (partitioner, assignment, strata, edge_data …), and
    any other facts the algorithm's later hooks need, as attributes."""

    def __init__(self, graph, program, engine=None, **facts):
        self.graph, self.program, self.engine = graph, program, dict(engine or {})
        self.__dict__.update(facts)


class Dataset:
    """The data of one fit, as every worker reads it: train and test graphs, labels,
    a vocabulary, where it came from, the training and test samples' ``weights`` and
    ``test_weights`` (None: 1 each). ``save``/``load`` move it to worker processes as one .npz
    (no pickles)."""

    GRAPHS, ARRAYS = ("train", "test"), ("labels", "test_labels", "weights", "test_weights")

    def __init__(self, train, test=None, labels=None, test_labels=None, vocab=None, source=None, weights=None,
                 test_weights=None, **facts):
        self.train, self.test, self.labels, self.test_labels = train, test, labels, test_labels
        self.weights, self.test_weights = weights, test_weights
        self.vocab, self.source = vocab, source if source is not None else getattr(train, "source", "arrays")
        self.facts = facts                       # small JSON-able extras (format, zero_based …)

    @property
    def source(self):
        """Where the data came from, as the user named it (``<stdin>``, not its temporary copy)."""
        return self._source

    @source.setter
    def source(self, value):
        self._source = display_name(value) if isinstance(value, str) else value

    def save(self, path):
        from tux2.loaders import save_ids
        arrays, meta = {}, {"source": self.source, "facts": self.facts, "graphs": {}}
        for name in self.GRAPHS:
            g = getattr(self, name)
            if g is None:
                continue
            meta["graphs"][name] = {"n": list(g.n), "types": list(g.type_names), "source": g.source,
                                    "values": g.values is not None, "ids": [m is not None for m in g.ids],
                                    "unknown": g.unknown is not None, "skipped": int(g.skipped)}
            arrays.update({f"{name}_src": g.src, f"{name}_dst": g.dst})
            if g.values is not None:
                arrays[f"{name}_values"] = g.values
            for side, m in enumerate(g.ids):
                if m is not None:
                    arrays[f"{name}_ids{side}"] = save_ids(m, g.n[side])
                if g.unknown is not None:          # edges whose user or item the training data lacks
                    arrays[f"{name}_unknown{side}"] = g.unknown[side]
                if g.unknown_ids is not None:      # their ids as written: a ranking counts each new user once
                    w = np.asarray(g.unknown_ids[side])
                    arrays[f"{name}_unknown_ids{side}"] = w if w.dtype.kind != "O" else np.array(
                        [str(x) for x in w.tolist()], dtype=str)
        arrays.update({k: np.asarray(getattr(self, k)) for k in self.ARRAYS if getattr(self, k) is not None})
        if self.vocab is not None:
            arrays["vocab"] = np.array(self.vocab, dtype=str)
        arrays["meta"] = np.array(json.dumps(meta))
        files.write_atomic(path, lambda f: np.savez(f, **arrays))

    @classmethod
    def load(cls, path):
        from tux2.loaders import IdMap
        with np.load(path, allow_pickle=False) as z:
            a = {k: z[k] for k in z.files}
        meta = json.loads(str(a["meta"]))
        graphs = {name: BipartiteGraph(a[f"{name}_src"], a[f"{name}_dst"], a.get(f"{name}_values"), *m["n"],
                                       m["types"], m["source"],
                                       [IdMap(a[f"{name}_ids{s}"]) if has else None for s, has in enumerate(m["ids"])])
                  for name, m in meta["graphs"].items()}
        for name, m in meta["graphs"].items():
            g = graphs[name]
            g.skipped = m.get("skipped", 0)
            if m.get("unknown"):
                g.unknown = (a[f"{name}_unknown0"], a[f"{name}_unknown1"])
            if f"{name}_unknown_ids0" in a:
                g.unknown_ids = [a[f"{name}_unknown_ids0"], a[f"{name}_unknown_ids1"]]
        vocab = a["vocab"].tolist() if "vocab" in a else None
        return cls(graphs["train"], graphs.get("test"), a.get("labels"), a.get("test_labels"), vocab, meta["source"],
                   a.get("weights"), a.get("test_weights"), **meta["facts"])


# ---------------------------------------------------------------- partitions
MAX_PARTITIONS = 1 << 20        # each partition costs arrays and a place in a table


def partitions(requested, world, threads=None, tiled=False):
    """P: ``requested``, or one per worker and thread (each worker owns at least one);
    ``tiled``: one per worker, its threads sharing it tile by tile (Engine(tiles=...))."""
    if requested is not None and (isinstance(requested, bool) or not isinstance(requested, numbers.Integral)
                                  or not 1 <= requested <= MAX_PARTITIONS):
        raise PartitionError(f"partitions must be a whole number from 1 to {MAX_PARTITIONS}, got {requested!r}")
    if requested is not None and requested < world:
        raise Tux2Error(f"--partitions {requested} is fewer than the {world} workers: each worker owns at "
                        "least one partition")
    return requested if requested is not None else world * (1 if tiled else threads or 1)


def check_partitions(parts, num_edges, requested=None, world=1, threads=None):
    """More partitions than edges leaves some empty for nothing and costs layout time
    per partition: refused, as 'tux2 partition' does, whether the P of the run
    (``parts``) was asked for (``requested``) or follows from the workers and threads."""
    if parts > max(num_edges, 1):
        how = (f"--partitions {requested}" if requested is not None else
               f"{parts} partitions (--workers {world} × --threads {threads or 1})")
        raise Tux2Error(f"{how} for {num_edges} edges: some partitions would be empty; use at most as many "
                        "partitions as edges" + ("" if requested is not None else ", fewer workers or threads"))


# ---------------------------------------------------------------- what a run prints
class Speaker:
    """``say(*parts)``: print (flushed) when on. On a terminal the iteration loop adds
    a live progress bar below these lines. ``lines`` keeps what was said (a model's
    summary.txt), even when quiet."""

    def __init__(self, on, record=False):
        self.on = on and sys.stdout is not None     # None: started with standard output closed (>&-)
        self.tty = self.on and sys.stdout.isatty()
        self.bar = None
        self.lines = [] if record else None

    def __call__(self, *parts):
        if self.lines is not None:
            self.lines.append(" ".join(str(p) for p in parts))
        if not self.on:
            return
        try:
            if self.bar is not None:
                self.bar.write(" ".join(str(p) for p in parts))
            else:
                print(*parts, flush=True)
        except OSError as e:        # `| head` has exited, or a full disk: the run and its files go on, unprinted
            self.on = False
            files.stdout_gone()
            if not isinstance(e, BrokenPipeError):
                print(f"tux2: warning: cannot write to standard output ({e.strerror}); the run goes on without "
                      "its progress lines", file=sys.stderr, flush=True)


BAR_METRICS = ("rmse", "objective", "ll_per_token")     # context fields shown on the bar, when present


def _progress_bar(eng, n, start, say, unit):
    """A tqdm bar over iterations, advanced per mini-batch clock, with the current metric."""
    if say is None or not say.tty or n <= start:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    bar = tqdm(total=n, initial=start, unit=unit, dynamic_ncols=True, leave=False, file=sys.stdout,
               bar_format="{l_bar}{bar}| {n:.1f}/{total} {unit}s [{elapsed}<{remaining}{postfix}]")
    state = {"first": eng.clock, "per": None, "shown": 0.0}

    def on_clock(e):
        if state["per"]:
            now = time.monotonic()
            if now - state["shown"] > 0.2:
                bar.n = min(e.iteration - 1 + (e.clock - state["first"]) / state["per"], e.iteration)
                bar.refresh()
                state["shown"] = now
    eng.on_clock = on_clock
    say.bar = bar
    return bar, state


def timed_epochs(eng, n, start=0, say=None, unit="epoch", before=0.0):
    """Run iterations start+1 … n one at a time, yielding (i, seconds, total seconds
    (from ``before``: a resumed run's seconds up to ``start``),
    {"bytes_sent", "wait_s"}, with several workers also "staleness": [clocks started 0,
    1, 2, … clocks behind, as the trace's ``staleness``]) for each (wait: seconds this
    worker waited for others, from the per-clock trace). With ``say`` on a terminal a progress bar shows the
    position and the current metric."""
    barrier(eng.transport, "start")       # every worker set up: the first epoch's time is its own
    bar = _progress_bar(eng, n, start, say, unit)
    total = float(before or 0.0)
    try:
        for i in range(start + 1, n + 1):
            b0, c0, r0 = eng.transport.bytes_sent, eng.clock, len(eng.trace)
            if bar:
                bar[1]["first"] = c0
            t = time.perf_counter()
            eng.run(1)
            dt = time.perf_counter() - t
            total += dt
            if bar:
                bar[1]["per"] = max(eng.clock - c0, 1)
                ctx = eng.context()
                bar[0].set_postfix_str(", ".join(f"{k} {ctx[k]:.5g}" for k in BAR_METRICS if k in ctx),
                                       refresh=False)
                bar[0].n = i
                bar[0].refresh()
            comm = {"bytes_sent": int(eng.transport.bytes_sent - b0),
                    "wait_s": round(sum(r["wait_s"] for r in eng.trace[r0:]), 6)}
            if getattr(eng.transport, "world", 1) > 1:
                comm["staleness"] = staleness_histogram(eng.trace[r0:])
            yield i, dt, total, comm
    finally:
        if bar:
            bar[0].close()
            say.bar = None
            eng.on_clock = None


def staleness_histogram(records):
    """[number of clocks that started 0, 1, 2, … clocks stale] of per-clock trace
    records (a fused run of n clocks counts n)."""
    out = []
    for r in records:
        s = r.get("staleness")
        if s is not None:
            out += [0] * (s + 1 - len(out))
            out[s] += r.get("clocks", 1)
    return out


@contextlib.contextmanager
def metrics_stream(path, rank, append=False, unit="epoch"):
    """Yield ``write(record)``: one JSON line per call to ``path``, flushed, on rank 0;
    a no-op without a path or on other ranks. ``append``: the iteration a resumed run
    continues from; the file keeps the records up to it (those after it were made by
    the interrupted run past its checkpoint and are made again)."""
    if not path or rank != 0:
        yield lambda rec: None
        return
    files.make_parent(path)
    if append and os.path.isfile(path):       # (not /dev/stdout: nothing to keep there)
        keep = []
        with open(path, "rb") as f:
            for line in f:
                try:
                    if json.loads(line).get(unit, 0) <= append:
                        keep.append(line)
                except ValueError:          # a torn last line
                    pass
        files.write_atomic(path, files.text(b"".join(keep).decode()))
    with open(path, "ab" if append else "wb", buffering=0) as f:
        yield lambda rec: files.write_whole(f, path, (files.json_text(rec) + "\n").encode())


class Checkpoints:
    """Saving every ``every`` iterations into ``directory`` and resuming from
    ``resume`` for one run; ``params`` identify the run (a resume with others is
    refused), ``inputs`` are the input files' ``checkpoint.input_stats``; ``test``
    (rank 0's): the test set the run evaluates on, as (graph or None, labels or None,
    how an error names it), recorded in each checkpoint and checked on resume; ``weights``:
    the training samples' weights (None: 1 each), which a resume with others names."""

    def __init__(self, eng, transport, directory=None, every=0, resume=None, params=None, inputs=None, test=None,
                 weights=None):
        self.eng, self.transport, self.dir, self.every, self.resume_dir = eng, transport, directory, every, resume
        self.params, self.inputs = params or {}, inputs or {}
        self.weights = ckpt.weights_sum(weights) if every or resume else None
        # (its checksum only when there are checkpoints to write or read: ~0.1 s per million test edges)
        self.test = ckpt.test_sum(*test) if test is not None and (every or resume) else False
        self._lock = None
        self.kept = None                        # rank 0's (arrays, JSON) the resumed checkpoint kept besides the engine
        self.keeps = False                      # whether it kept one (on every rank)
        self._made = []                         # directories made for the checkpoints, deepest first
        if self.every and getattr(transport, "rank", 0) == 0:
            path = os.path.abspath(self.dir)
            while not os.path.exists(path):
                self._made.append(path)
                path = os.path.dirname(path)
            self._lock = ckpt.lock(self.dir)     # a second run writing here stops now, with a reason

    def resume(self, say=None, unit="epoch"):
        """(the iteration the run continues from, the metrics records up to it): (0, [])
        without a checkpoint to resume; a checkpoint older than its history: (i, [])."""
        if not self.resume_dir:
            return 0, []
        t0 = time.perf_counter()
        state = ckpt.load(self.resume_dir, self.eng, self.params, self.transport, inputs=self.inputs, test=self.test,
                          weights=self.weights)
        if say is not None:
            say(f"  resumed from {self.resume_dir} after {unit} {self.eng.iteration}" + (_relaid(
                state, self.eng, getattr(self.transport, "world", 1), time.perf_counter() - t0, self.params)
                if state.get("relaid") else ""))
        history = state.get("history")
        self.kept, self.keeps = state.get("kept"), state["keeps"]
        return self.eng.iteration, history if isinstance(history, list) else []

    def after(self, i, history=None, kept=None):
        if self.every and i % self.every == 0:
            ckpt.save(self.dir, self.eng, self.params, self.transport, inputs=self.inputs, history=history, kept=kept,
                      test=self.test if self.test is not False else None, weights=self.weights)

    def close(self):
        """Release the checkpoint directory (the next run may write there)."""
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None
            if self._made and os.listdir(self.dir) == [".lock"]:    # no checkpoint written: nothing left behind
                os.remove(os.path.join(self.dir, ".lock"))
                for d in self._made:
                    try:
                        os.rmdir(d)
                    except OSError:                 # not empty: --out got other files meanwhile
                        break


def _relaid(state, eng, world, seconds, params):
    """How a checkpoint of another layout was resumed, for the run's header."""
    then = (state.get("params") or {}).get("partitioner")
    now = params.get("partitioner")

    def layout(w, p, partitioner):
        return f"{w} worker{'' if w == 1 else 's'}, {p} partition{'' if p == 1 else 's'}" + (
            f" ({partitioner})" if then != now and partitioner is not None else "")
    return (f": a checkpoint of {layout(state.get('world'), state.get('partitions'), then)} laid out on this run's "
            f"{layout(world, eng.P, now)} ({seconds:.1f} s)")


def checkpoint_options(directory, every, resume, params, world, inputs=None):
    """The ``checkpoint`` keywords of ``train`` (Checkpoints'); a checkpoint in
    ``resume`` that this run cannot resume is refused now, before the data is read."""
    if resume:
        ckpt.check(resume, params, world)
    return {"directory": directory, "every": every, "resume": resume, "params": params, "inputs": inputs}


def write_trace(directory, name, text):
    """``text`` to DIRECTORY/NAME when --trace gives a directory: a worker's per-clock
    records (trace-RANK.jsonl), its share of a distributed ingress (ingress-RANK.json)."""
    if directory:
        os.makedirs(directory, exist_ok=True)
        files.write_atomic(os.path.join(directory, name), files.text(text))


def _compiled(n):
    """What the setup line adds about compiling: a first run's seconds are numba's."""
    if n == 0:                  # (with NUMBA_DISABLE_JIT nothing compiles either)
        return ""
    if cache_unwritable():
        return (f" (numba compiled {n} functions; the kernel cache {cache_unwritable()} cannot be written, so every "
                "run compiles them: set TUX2_CACHE_DIR to a writable directory)")
    return f" (numba compiled {n} functions; " + ("later runs load them from the kernel cache)" if cache_dir()
                                                  else "the kernel cache is off)")


def _compile_note():
    """On stderr as numba starts a first run's compiling (3-30 s, 100 s with --workers on
    2 busy cores, that looked like a hang), when stderr is a terminal (someone waits; logs
    and pipes get only results and errors, as tux2.cli.common.note_first_read)."""
    if sys.stderr is not None and sys.stderr.isatty():
        print("tux2: note: compiling kernels (first run of this program; later runs load them from the kernel "
              "cache)...", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the run
def train(est, data, *, transport=None, partitions=None, threads=None, slack=0, say=None, metrics=None,
          checkpoint=None, trace=None, callbacks=(), stop=None, straggler=None):
    """Train ``est`` on ``data`` (a Dataset, or what its ``prepare`` takes) as one
    worker of ``transport`` (None: one process). ``checkpoint``: Checkpoints keywords
    (directory, every, resume, params, inputs). A callback returning True (as
    xgboost's do) ends training after that iteration, as does the file ``stop`` once it
    exists (checked by every worker after each iteration, agreed on together). Sets
    the estimator's learned state (on rank 0), ``history_`` (the metrics records) and
    ``run_`` (facts of the run). ``straggler``: tux2.engine.Straggler (one worker
    slowed, for experiments)."""
    rank, world = (transport.rank, transport.world) if transport is not None else (0, 1)
    printed = say is not None           # fit() from Python prints nothing: its notes come as warnings
    say = say or _Warner(est)
    requested = partitions
    parts = globals()["partitions"](requested, world, threads, est.tiled())
    setup = est.prepare(data, parts)
    source = setup.source if hasattr(setup, "source") else getattr(data, "source", None)
    held_out = getattr(data, "facts", {}).get("held_out")
    weights = getattr(data, "weights", None)
    same = rank == 0 and not held_out and _same_data(getattr(data, "train", None), getattr(data, "test", None))
    del data            # the data as loaded, when the caller kept no reference: the setup has what the run needs
    # (fit's own empty data is refused before; this is what the split left; distributed ingress's share of a
    # worker may be empty where the whole is not: tux2.ingress says it of the whole)
    if setup.graph.num_edges == 0 and not getattr(setup, "ingress", False):
        raise InputError("no edges left to train on: " + (
            "the held-out test share took every one; a smaller --test-fraction keeps some" if held_out else
            "the data has none"), path=source)
    for line in est._header(setup, parts, world):
        say(line)
    setup.test_is_training = same           # est._report leaves out what holds of new data only
    if same:
        say("  note: the test set is the training file itself: its metrics measure the fit to seen data, not "
            "prediction; hold out a part (a split the model never trains on) to measure that")
    check_partitions(parts, setup.graph.num_edges, requested, world, threads)
    t0 = time.perf_counter()
    with counting_compiles(_compile_note if printed and rank == 0 else None) as compiled:
        eng = Engine(setup.program, setup.graph, partitions=parts, seed=getattr(est, "seed", 0), transport=transport,
                     slack=slack, threads=threads, straggler=straggler, **setup.engine)
    say(f"  layout + compile {time.perf_counter() - t0:.2f}s{_compiled(compiled.n)}"
        + (f"; {eng.threads} threads" if eng.threads > 1 else "")
        + (f" on this machine's {cores()} cores: they take turns, no faster than {cores()}" if eng.threads > cores()
           else ""))
    if threads is not None and eng.threads < threads:
        say(f"  note: {eng.threads} of --threads {threads} used: " + (
            "a stratum has no more tiles per partition" if eng.tiles is not None else
            "a worker runs at most one thread per partition (--partitions makes more)"))
    unit, n = est._unit, getattr(est, est._iterations)
    ck = Checkpoints(eng, transport, **(checkpoint or {}), test=_test_set(setup, held_out) if rank == 0 else None,
                     weights=weights)
    try:
        start, history = ck.resume(say, unit)      # a resume's history goes on from the checkpoint's records
        if ck.kept is not None:
            est._take_kept(setup, *ck.kept)
        history = [rec for rec in history if isinstance(rec, dict) and rec.get(unit, start + 1) <= start]
        if ck.resume_dir and start >= n:
            say(f"  note: the checkpoint in {ck.resume_dir} is at {unit} {start}, --{est._iterations} {n}: nothing to "
                f"train; the model is the checkpoint's (--{est._iterations} above {start} trains on)")
        stopped = est._early(history, setup) if ck.keeps and start < n else None   # the checkpoint's run stopped
        if stopped:                                                                 # there (early stopping): it stays
            say(stopped)
        with metrics_stream(metrics, rank, append=start, unit=unit) as write, \
                _keeping_kept(est, setup, eng, transport, printed):
            before = history[-1].get("total_time_s", 0.0) if history else 0.0
            for i, dt, total, comm in timed_epochs(eng, start if stopped else n, start, say, unit, before):
                rec = {unit: i, "time_s": round(dt, 6), "total_time_s": round(total, 6), **est.record(eng, setup)}
                rec.setdefault("clock", eng.clock)
                rec.update({k: count / dt if dt > 0 else None for k, count in est._rates(setup).items()})
                rec.update(comm)
                if rank == 0:
                    say(est._line(rec, n))
                write(rec)
                history.append(rec)
                halt = _stops([cb(rec) for cb in callbacks])
                message = est._diverged(rec)
                if message:
                    raise DivergenceError(message)      # (_keeping_kept: in Python's words from fit)
                ck.after(i, history, est._kept(setup) if rank == 0 else None)
                message = est._converged(history)
                if message:
                    say(message)
                    break
                if stop is not None:
                    halt = halt or os.path.exists(stop)
                early = est._early(history, setup)      # (on rank 0, which has the test metric)
                if transport is not None and (callbacks or stop is not None or est._stops_early):
                    halt = any(a[0][0] for a in transport.allgather(     # every worker stops, or none
                        f"stop{i}", [np.array([halt or early is not None], np.uint8)]))
                if (halt or early) and i < n:
                    say(early or f"  stopped by a callback after {unit} {i} of {n}")
                    break
    finally:
        ck.close()
    if trace:                           # (thousands of clocks: JSON only when asked for)
        try:
            write_trace(trace, f"trace-{rank}.jsonl", "".join(files.json_text(rec) + "\n" for rec in eng.trace))
        except files.FileError as e:    # a diagnostic: the trained model is still the run's to keep (--out)
            if printed:
                print(f"tux2: warning: --trace: {e}; the run goes on to its model", file=sys.stderr, flush=True)
            else:
                warnings.warn(f"trace: {e}; the model is fitted all the same", RuntimeWarning, stacklevel=2)
    if n == 0 and not start:
        say(f"0 {unit}s: nothing trained")
    est.read_model(eng, setup)
    est.history_ = history
    est.run_ = {"source": display_name(source) if isinstance(source, str) else source,
                "partitions": parts, "workers": world, "clock": eng.clock, "iteration": eng.iteration,
                "context": eng.context(), **getattr(setup, "meta", {})}
    if rank == 0:
        for line in est._report(setup):
            say(line)
    return eng


@contextlib.contextmanager
def _keeping_kept(est, setup, eng, transport, printed):
    """Training that diverges after the run kept a model (``est._kept``: MF's best epoch
    under early_stop) ends with that model, as Keras' EarlyStopping(restore_best_weights)
    with TerminateOnNaN or LightGBM's best iteration do: the run goes on to read it and
    (the CLI) write it, with a warning naming the diverged epoch and the kept one, not an
    error that loses it. Without a kept model divergence stays an error. Every worker
    diverges at the same epoch (the metric is the global context's), so all of them ask
    rank 0, which holds the kept model, whether there is one."""
    try:
        yield
    except DivergenceError as e:
        kept = est._kept(setup) if (transport is None or transport.rank == 0) else None
        if transport is not None and transport.world > 1:
            has = transport.allgather("diverged", [np.array([kept is not None], np.uint8)])[0][0][0]
        else:
            has = kept is not None
        if not has:
            if printed:
                raise
            raise DivergenceError(est._in_python(str(e))) from None
        n, unit = eng.iteration, est._unit
        if isinstance(getattr(setup, "meta", None), dict):
            setup.meta["diverged_at"] = n           # (run_, model.json)
        if kept is None:            # (a worker other than rank 0: rank 0 speaks)
            return
        meta = kept[1]
        why = (est._stop.format(key=est._watch, unit=unit, n=n, value=float("nan"), est=est) if est._watch
               else str(e))
        scores = ", ".join(f"{k} {v:.4f}" for k, v in meta.items() if k != unit and isinstance(v, float))
        text = (f"{why}. The model of {unit} {meta.get(unit, '?')} ({scores}), the best that early stopping (--early-stop) kept, is "
                + ("the run's model and what --out writes" if printed else "the fitted model"))
        if printed:
            print(f"tux2: warning: {text}", file=sys.stderr, flush=True)
        else:
            warnings.warn(est._in_python(text), RuntimeWarning, stacklevel=_caller_level())


def _stops(answers):
    """Whether a callback answered True (exactly: a returned 1, array or record is no stop)."""
    return any(a is True or (isinstance(a, np.bool_) and bool(a)) for a in answers)


def _test_set(setup, held_out):
    """(graph, labels, how an error names it) of the test set a run evaluates on, for
    its checkpoints (``Checkpoints``)."""
    test = getattr(setup, "test", None)
    name = display_name(getattr(test, "source", None))
    name = name if isinstance(name, str) and name not in ("arrays", "test") else None
    name = (f"the test share held out of {name} (--test-fraction)" if held_out and name else
            f"the test set {name}" if name else "the test set")
    return test, getattr(setup, "test_labels", None), name


def _same_files(a, b):
    """Whether ``a`` and ``b`` are paths of one file."""
    try:
        return isinstance(a, str) and isinstance(b, str) and os.path.samefile(a, b)
    except OSError:
        return False


def _same_data(train, test):
    """Whether the test set is the training set: read from one file, with the same edges
    (graphs a caller split from one file keep its name as their source, and differ)."""
    if not _same_files(*(display_name(getattr(g, "source", None)) for g in (train, test))):
        return False
    a, b = (getattr(g, "src", None) for g in (train, test))
    return a is None or b is None or (len(a) == len(b) and np.array_equal(a, b)
                                      and np.array_equal(train.dst, test.dst))


class _Warner(Speaker):
    """fit()'s speaker: silent, but each note a run prints is a RuntimeWarning, in the
    estimator's parameter names ('lower --eta' → 'lower eta=')."""

    def __init__(self, est):
        super().__init__(False)
        self.est = est

    def __call__(self, *parts):
        line = " ".join(str(p) for p in parts).strip()
        if line.startswith("note: "):
            warnings.warn(self.est._in_python(line.removeprefix("note: ")), RuntimeWarning, stacklevel=_caller_level())


def abort_reason(e):
    """What the other workers read of this worker's failure ``e`` (and the parent of
    ``fit_workers``): tux2's own errors as they say themselves ('FILE:LINE: …'; a relayed
    one not as 'PeerLost: worker 0 failed: …'), Ctrl-C or SIGTERM by what it did, other
    exceptions with their type's name."""
    if isinstance(e, KeyboardInterrupt):
        return interrupt.stopped()[1]
    return str(e) if isinstance(e, Tux2Error) else f"{type(e).__name__}: {e}"


# ---------------------------------------------------------------- several workers from Python
WORKER_MB = 150        # one worker process's memory before any data: Python, numpy, numba, ZeroMQ (measured RSS)


def available_memory():
    """Bytes of memory this machine can still give (MemAvailable), None if unknown."""
    try:
        with open("/proc/meminfo") as f:
            return next(int(x.split()[1]) * 1024 for x in f if x.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return None


def local_workers(n, flag):
    """``n`` worker processes on this machine (``flag``: --workers, or fit's workers=): more
    than its memory holds (WORKER_MB each, before any data) is a Tux2Error; more than its
    cores, the warning to give, for they take turns (20k ratings, 3 epochs, 2 cores: 1.5 s
    on 1 worker, 25 s on 16); else None. Several machines run a worker each, started by a
    launcher (--rank, --world), not by these."""
    free = available_memory()
    if free is not None and n * WORKER_MB << 20 > free:
        raise Tux2Error(f"{flag} {n} starts {n} processes on this machine, about {WORKER_MB} MB each before any "
                        f"data ({n * WORKER_MB / 1024:.1f} GB), and it has {free / 2**30:.1f} GB available: use "
                        f"at most {cores()} (its cores); on several machines start one worker per host with a "
                        "launcher (--rank, --world: README, Running on several workers)")
    if n > cores():
        return (f"{flag} {n} on this machine's {cores()} cores: the workers take turns on them, slower than "
                f"{cores()} (threads share the cores within a worker); on several machines start one worker per "
                "host with a launcher (--rank, --world)")
    return None


def fit_workers(est, data, workers, *, partitions=None, threads=None, slack=0, callbacks=(), checkpoint=None,
                timeout=30.0, grace=2.0):
    """``train`` in ``workers`` processes over ZeroMQ on loopback, the data handed over
    as a temporary .npz. Rank 0's learned state comes back into ``est``; ``callbacks``
    see each record as rank 0 writes it. A failing worker stops every other (its error
    is raised here, naming it); none is left over. An estimator whose class can be
    imported starts fresh interpreters (``_start``), so a script need not guard its
    work with ``if __name__ == "__main__":``; one defined in the script itself needs
    multiprocessing's spawn, which runs the script again in every worker."""
    import pickle
    import secrets
    from tux2.runtime import died, free_port, supervise
    partitions_ = globals()["partitions"](partitions, workers, threads, est.tiled())
    slow = local_workers(workers, "workers=")
    if slow:
        warnings.warn(slow, RuntimeWarning, stacklevel=3)
    if threads is None and est.tiled():         # the cores shared out, not each worker taking them all
        threads = max(1, cores() // workers)
    tmp = files.scratch_dir("fit")
    term = _exit_on_sigterm()
    try:
        data.save(os.path.join(tmp, "data.npz"))
        job = {"dir": tmp, "world": workers, "rendezvous": f"tcp://127.0.0.1:{free_port()}",
               "secret": secrets.token_hex(16), "partitions": partitions_, "threads": threads, "slack": slack,
               "timeout": timeout, "checkpoint": checkpoint, "stop": os.path.join(tmp, "stop")}
        procs = _start(est, job)
        metrics, seen = os.path.join(tmp, "metrics.jsonl"), [0]

        def tail():
            if not os.path.exists(metrics):
                return
            with open(metrics, "rb") as f:
                f.seek(seen[0])
                chunk = f.read()
            whole = chunk[: chunk.rfind(b"\n") + 1]
            seen[0] += len(whole)
            for line in whole.splitlines():
                if _stops([cb(json.loads(line)) for cb in callbacks]):
                    open(job["stop"], "w").close()      # the workers end training after the iteration they are in
        first, codes = supervise(procs, grace, poll=tail, quiet=True)     # fit prints nothing: the error says it
        tail()
        _rewarn(tmp)
        if first is not None:
            path = os.path.join(tmp, f"error-{first}.txt")
            why = open(path, encoding="utf-8").read() if os.path.exists(path) else died(codes[first])
            if not os.path.exists(path) and type(est).__module__ == "__main__":
                why += (f" ({type(est).__name__} is defined in the script, which multiprocessing runs again in "
                        "every worker: put the script's work under 'if __name__ == \"__main__\":', or define the "
                        "class in a module it imports)")
            raise _error_class(os.path.join(tmp, f"error-{first}.class"))(f"[worker {first}] {why}")
        with open(os.path.join(tmp, "result.pkl"), "rb") as f:      # our own child's, in our private directory
            est.__dict__.update(pickle.load(f))
        return est
    finally:
        files.remove_scratch(tmp)
        if term is not None:
            signal.signal(signal.SIGTERM, term)


def _error_class(path):
    """The tux2 error class a worker named in ``path`` (DivergenceError, InputError …),
    so ``except tux2.DivergenceError`` works with workers too; Tux2Error otherwise."""
    from tux2 import errors
    try:
        with open(path, encoding="utf-8") as f:
            cls = getattr(errors, f.read().strip(), Tux2Error)
    except OSError:
        return Tux2Error
    return cls if isinstance(cls, type) and issubclass(cls, Tux2Error) else Tux2Error


def _exit_on_sigterm():
    """SIGTERM (kill, a job scheduler) as SystemExit while fit's workers run, so the
    workers are stopped and the temporary directory removed; returns the handler it
    replaced (None off the main thread, where none can be set, or when the program set
    its own)."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return None

    def stop(signum, frame):
        raise SystemExit(128 + signum)
    return signal.signal(signal.SIGTERM, stop)


def _start(est, job):
    """The worker processes of ``job``: fresh interpreters given ``est`` pickled (its
    class by name, importable there), or multiprocessing's spawn for a class of the
    main script."""
    import pickle
    import subprocess
    if type(est).__module__ in ("__main__", "__mp_main__"):
        script = getattr(sys.modules["__main__"], "__file__", None)
        if not (script and os.path.isfile(script)):
            raise Tux2Error(f"{type(est).__name__} is defined in an interactive session (a notebook, python -c, "
                            "standard input), from which worker processes cannot import it: define the class in a "
                            "module (a .py file beside the notebook) and import it, or fit with workers=1")
        import multiprocessing
        spawn = multiprocessing.get_context("spawn")
        procs = [spawn.Process(target=_worker, args=(est, r, job), name=f"tux2-worker-{r}", daemon=True)
                 for r in range(job["world"])]
        for p in procs:
            p.start()
        return [_Proc(p) for p in procs]
    path = os.path.join(job["dir"], "job.pkl")      # our own, in our private directory
    files.write_atomic(path, lambda f: pickle.dump((est, job), f))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}   # where this process imports from
    # A terminal's Ctrl-C reaches the workers too: one still starting printed KeyboardInterrupt's
    # traceback (importing tux2 and numba) or 'Fatal Python error' (in site). They start with SIGINT
    # blocked (inherited through exec) and ignore it from their first line; the caller alone answers
    # it, stopping them by SIGTERM (runtime.supervise).
    code = ("import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); "
            "signal.pthread_sigmask(signal.SIG_UNBLOCK, {{signal.SIGINT}}); "
            "from tux2.runner import _worker_main; _worker_main({!r}, {})")
    with interrupt.sigint_blocked():
        return [subprocess.Popen([sys.executable, "-c", code.format(path, r)], env=env)
                for r in range(job["world"])]


def _worker_main(path, rank):
    """A worker started by ``_start``: the estimator and the job from ``path``."""
    import pickle
    try:
        with open(path, "rb") as f:
            est, job = pickle.load(f)
    except Exception as e:          # its class's module is not importable here: the parent says why
        with open(os.path.join(os.path.dirname(path), f"error-{rank}.txt"), "w", encoding="utf-8") as f:
            f.write(f"cannot load the estimator in a new process ({type(e).__name__}: {e}); its class must be "
                    f"importable there, from a module on sys.path as it was when fit was called")
        os._exit(1)
    _worker(est, rank, job)


class _Proc:
    """A multiprocessing.Process as ``runtime.supervise`` sees a process."""

    def __init__(self, p):
        self.p = p

    def poll(self):
        return self.p.exitcode

    def kill(self):
        self.p.kill()

    def send_signal(self, signum):
        try:
            os.kill(self.p.pid, signum)
        except ProcessLookupError:      # it ended meanwhile
            pass

    def wait(self):
        self.p.join()
        return self.p.exitcode


def _keep_notes(notes, job):
    """Rank 0's warnings (the run's notes), as JSON in the job's directory."""
    text = json.dumps([[w.category.__name__, str(w.message)] for w in notes])
    files.write_atomic(os.path.join(job["dir"], "warnings.json"), files.text(text))


def _rewarn(directory):
    """The notes of rank 0 (``_keep_notes``) as warnings of the caller of fit."""
    try:
        with open(os.path.join(directory, "warnings.json"), encoding="utf-8") as f:
            notes = json.load(f)
    except (OSError, ValueError):
        return
    for name, message in notes:
        cls = {"UserWarning": UserWarning}.get(name, RuntimeWarning)
        warnings.warn(message, cls, stacklevel=_caller_level())


_TUX2 = os.path.dirname(os.path.abspath(__file__))


def _caller_level():
    """warnings.warn's stacklevel, from the function that calls this, of the first frame outside
    tux2 (and contextlib): the line that called fit, however many of tux2's frames lie between
    (an estimator's own fit, as GLM's with sample_weight, adds one)."""
    f, level = sys._getframe(2), 2
    while f is not None and (f.f_code.co_filename.startswith(_TUX2) or f.f_code.co_filename == contextlib.__file__):
        f, level = f.f_back, level + 1
    return level


def _worker(est, rank, job):
    """One process of ``fit_workers``: its transport, the run, rank 0's result file."""
    import pickle
    from tux2.runtime import connect, die_with_parent
    die_with_parent()
    transport = None
    caught = warnings.catch_warnings(record=True)
    notes = caught.__enter__()          # rank 0's notes go to the caller (_rewarn), not to this stderr
    warnings.simplefilter("always")
    try:
        data = Dataset.load(os.path.join(job["dir"], "data.npz"))
        transport = connect(rank, job["world"], job["rendezvous"], job["partitions"], timeout=job["timeout"],
                            secret=job["secret"].encode(), options=est.get_params())
        train(est, data, transport=transport, partitions=job["partitions"], threads=job["threads"],
              slack=job["slack"], metrics=os.path.join(job["dir"], "metrics.jsonl"), checkpoint=job["checkpoint"],
              stop=job["stop"])
        if rank == 0:
            _keep_notes(notes, job)
            learned = {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")}
            files.write_atomic(os.path.join(job["dir"], "result.pkl"), lambda f: pickle.dump(learned, f))
    except BaseException as e:
        if rank == 0:
            _keep_notes(notes, job)
        if transport is not None:
            transport.abort(abort_reason(e))
            transport.close()
        with open(os.path.join(job["dir"], f"error-{rank}.txt"), "w", encoding="utf-8") as f:
            f.write(abort_reason(e))
        if isinstance(e, Tux2Error) and type(e).__module__ == "tux2.errors":   # the parent raises the same class
            with open(os.path.join(job["dir"], f"error-{rank}.class"), "w", encoding="utf-8") as f:
                f.write(type(e).__name__)
        os._exit(1)                 # the parent reports it: no traceback here
    transport.close()
