"""Stop words: the function words that LDA on raw English text would otherwise
spend its topics on ('the', 'of', 'and' fill a third of such a corpus's tokens),
and the reader of ``--stop-words`` (``english``, ``none``, or a file)."""
import os

from tux2 import io, loaders
from tux2.errors import InputError

ENGLISH = frozenset("""
a about above after again against all almost along already also although always am among an and another any
anyone anything anyway are around as at be became because become becomes been before being below between both
but by can cannot could did do does doing done down during each either else enough etc even ever every few for
from further get gets given gives had has have having he her here hers herself him himself his how however i if
in into is it its itself just least less like made make makes many may me might more most mostly much must my
myself neither no nor not now of off often on once one only onto or other others otherwise our ours ourselves out
over own per perhaps please quite rather really same several shall she should since so some such than that the
their theirs them themselves then there therefore these they this those though through thus to together too
toward towards under until up upon us use used uses using very via was we well were what whatever when whenever
where whereas wherever whether which while who whoever whom whose why will with within without would yet you
your yours yourself yourselves
s t d ll m re ve
""".split())                # the last line: what the tokenizer leaves of "it's", "don't", "we'll", "you're" …


def stop_words(spec):
    """The stop words ``spec`` names: 'english' (ENGLISH), 'none' or None (no word), a
    file's words (whitespace-separated, matched as the tokenizer writes words: lower
    case; ``#`` starts a comment; gzip, bz2 or xz as ``loaders.plain_file`` reads
    them), or a collection of words."""
    if spec is None or spec == "none":
        return frozenset()
    if spec == "english":
        return ENGLISH
    if isinstance(spec, str) or hasattr(spec, "__fspath__"):
        try:
            os.stat(spec)           # a missing file is named here, with what --stop-words takes
            with loaders.plain_file(spec) as path, open(path, encoding="utf-8") as f:
                return frozenset(w for line in f for w in io.tokenize(line.split("#", 1)[0]))
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"cannot read the stop-word file: {getattr(e, 'strerror', None) or e} (--stop-words "
                             "takes english, none or a file of words)", path=spec) from None
    if not hasattr(spec, "__iter__"):
        raise InputError(f"stop_words is 'english', 'none', a file or a list of words, not {spec!r}")
    return frozenset(w for x in spec for w in io.tokenize(str(x)))
