"""``tux2 keys DIR``: a CURVE key pair for --curve."""
import os

from tux2 import files
from tux2.errors import Tux2Error


def add_parser(sub):
    keys = sub.add_parser("keys", help="create a CURVE key pair for --curve")
    keys.add_argument("dir", help="directory for tux2.key and tux2.key_secret (keep it private)")
    keys.set_defaults(func=make_keys)


def make_keys(args):
    import zmq.auth
    os.makedirs(args.dir, exist_ok=True)
    for f in ("tux2.key", "tux2.key_secret"):
        if os.path.exists(os.path.join(args.dir, f)):
            raise Tux2Error(f"{os.path.join(args.dir, f)} exists; not overwriting it")
    try:
        zmq.auth.create_certificates(args.dir, "tux2")
    except OSError as e:        # a full disk: this directory's error, and no half-written key to refuse next time
        for f in ("tux2.key", "tux2.key_secret"):
            files.discard(os.path.join(args.dir, f))
        raise files.write_error(args.dir, e) from None
    os.chmod(os.path.join(args.dir, "tux2.key_secret"), 0o600)
    print(f"CURVE key pair written to {args.dir}; copy the directory to every host and pass --curve {args.dir}")
    return 0
