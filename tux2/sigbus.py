"""The SIGBUS handler of :mod:`tux2.busguard`, compiled once into numba's kernel cache.

It is C-level code (numba ``cfunc``): a mapped file's fault happens in a numba loop,
where a Python handler would never run. Everything it calls is found by symbol name, and
the message it prints is read from the environment (``TUX2_SIGBUS_MESSAGE``) at the
fault, so the compiled code holds no address of this process and later runs load it
from the cache instead of compiling it (0.3-0.5 s a run on a 2-core machine).
``write``, ``strlen`` and ``_exit`` are async-signal-safe; ``getenv`` only reads
``environ``, which nothing changes while the parser runs."""
import numba
from numba import types
from numba.extending import intrinsic

VARIABLE = "TUX2_SIGBUS_MESSAGE"

_getenv = types.ExternalFunction("getenv", types.uintp(types.voidptr))
_strlen = types.ExternalFunction("strlen", types.uintp(types.uintp))
_write = types.ExternalFunction("write", types.intp(types.intc, types.uintp, types.uintp))
_exit = types.ExternalFunction("_exit", types.void(types.intc))


@intrinsic
def _variable(typingctx):
    """VARIABLE as a constant C string in the compiled code."""
    def codegen(context, builder, signature, args):
        return context.insert_const_string(builder.module, VARIABLE)
    return types.voidptr(), codegen


@numba.cfunc(types.void(types.intc), cache=True)
def on_sigbus(signum):
    text = _getenv(_variable())
    if text != 0:
        _write(2, text, _strlen(text))
    _exit(2)
