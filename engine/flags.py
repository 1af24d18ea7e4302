"""``tf.flags`` / ``tf.app.flags``: TF 1.15's command-line flags (the absl.flags API).

A program defines flags at import time and reads them from ``FLAGS``; as in TF1's wrapper,
the first read of a flag parses ``sys.argv`` (an unknown flag there is an error), and
``tf.app.run`` parses explicitly, passing unknown flags on to ``main``. Parsing follows
absl: ``--name=value``, ``--name value``, ``--bool``/``--nobool``, ``-name`` as ``--name``,
``--`` ends the flags, and other arguments are returned in order::

    import engine as tf

    tf.flags.DEFINE_integer("steps", 100, "Training steps.")
    FLAGS = tf.flags.FLAGS

    def main(argv):
        print(FLAGS.steps)

    tf.app.run(main)   # python prog.py --steps=5

One implementation, no absl dependency; errors use absl's types and wording.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Sequence

__all__ = [
    "Error",
    "IllegalFlagValueError",
    "UnrecognizedFlagError",
    "DuplicateFlagError",
    "UnparsedFlagAccessError",
    "FlagNameConflictsWithMethodError",
    "Flag",
    "FlagHolder",
    "FlagValues",
    "FLAGS",
    "DEFINE_string",
    "DEFINE_integer",
    "DEFINE_float",
    "DEFINE_boolean",
    "DEFINE_bool",
    "DEFINE_enum",
    "DEFINE_list",
    "DEFINE_multi_string",
    "DEFINE_multi_integer",
    "DEFINE_multi_float",
    "mark_flag_as_required",
    "mark_flags_as_required",
]


class Error(Exception):
    """The base class of flag errors (absl's ``flags.Error``)."""


class IllegalFlagValueError(Error):
    """A flag was given a value its parser rejects, or a required flag has none."""


class UnrecognizedFlagError(Error):
    """The command line names a flag that is not defined."""

    def __init__(self, flagname: str, flagvalue: str = "", suggestions: Sequence[str] = ()):
        self.flagname, self.flagvalue = flagname, flagvalue
        hint = f". Did you mean: {', '.join(suggestions)} ?" if suggestions else ""
        super().__init__(f"Unknown command line flag '{flagname}'{hint}")


class DuplicateFlagError(Error):
    """A flag name is defined twice."""


class UnparsedFlagAccessError(Error, AttributeError):
    """A flag value is read before the flags are parsed."""


class FlagNameConflictsWithMethodError(Error):
    """A flag is named like a ``FlagValues`` method."""


_TRUE = ("true", "t", "1", "yes", "y")
_FALSE = ("false", "f", "0", "no", "n")


def _parse_bool(text):
    if isinstance(text, bool):
        return text
    if isinstance(text, int) and text in (0, 1):
        return bool(text)
    if isinstance(text, str):
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
    raise ValueError(("Non-boolean argument to boolean flag", text))


def _parse_int(text):
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise TypeError(f"Expect argument to be a string or int, found {type(text)}")
    if isinstance(text, int):
        return text
    base = 16 if text.strip().lower().startswith(("0x", "-0x")) else 10
    return int(text, base)


def _parse_float(text):
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise TypeError(f"Expect argument to be a string, int, or float, found {type(text)}")
    return float(text)


def _parse_list(text):
    if isinstance(text, (list, tuple)):
        return [str(v) for v in text]
    text = str(text)
    return [v.strip() for v in text.split(",")] if text else []


def _edit_distance(a: str, b: str) -> int:
    """Damerau-Levenshtein distance (with adjacent transpositions), as absl's suggestions."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = int(a[i - 1] != b[j - 1])
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + cost)
    return d[len(a)][len(b)]


class Flag:
    """One flag: its name, help, default, parser and current value.

    ``parse(text)`` converts one command-line value (``multi`` flags append one item per
    occurrence); ``present`` counts the occurrences seen on the command line.
    """

    def __init__(self, parser: Callable, name: str, default, help_string: str, *, boolean=False):
        self.name, self.help, self.boolean = name, help_string, boolean
        self._parser = parser
        self.present = 0
        self.using_default_value = True
        self.default = None if default is None else self._convert(default)
        self.value = self.default

    def _convert(self, text):
        try:
            return self._parser(text)
        except (TypeError, ValueError) as e:
            raise IllegalFlagValueError(f"flag --{self.name}={text}: {e}") from None

    def parse(self, text) -> None:
        self.value = self._convert(text)
        self.using_default_value = False
        self.present += 1

    def unparse(self) -> None:
        self.value, self.using_default_value, self.present = self.default, True, 0


class MultiFlag(Flag):
    """A flag that may be repeated; its value is the list of the values given."""

    def __init__(self, item_parser: Callable, name, default, help_string):
        self._item = item_parser
        super().__init__(self._parse_items, name, default, help_string)

    def _parse_items(self, value):
        items = value if isinstance(value, (list, tuple)) else [value]
        return [self._item(v) for v in items]

    def parse(self, text) -> None:
        new = self._convert(text)
        self.value = new if self.using_default_value else [*self.value, *new]
        self.using_default_value = False
        self.present += 1


class FlagHolder:
    """What ``DEFINE_*`` returns: ``.value`` reads the flag from its ``FlagValues``."""

    def __init__(self, flag_values: FlagValues, flag: Flag):
        self._flag_values, self.name, self.default = flag_values, flag.name, flag.default

    @property
    def value(self):
        return getattr(self._flag_values, self.name)

    @property
    def present(self) -> bool:
        return bool(self._flag_values[self.name].present)


class FlagValues:
    """A registry of flags: ``FLAGS.name`` reads a value, ``FLAGS(argv)`` parses a command
    line and returns the arguments that are not flags (the program name first)."""

    def __init__(self):
        self.__dict__["_flags"] = {}
        self.__dict__["_parsed"] = False
        self.__dict__["_required"] = []

    # -- registry -------------------------------------------------------------------------
    def _register(self, flag: Flag) -> None:
        if flag.name in self._flags:
            raise DuplicateFlagError(
                f"The flag '{flag.name}' is defined twice. Description from first occurrence: "
                f"{self._flags[flag.name].help}"
            )
        if hasattr(type(self), flag.name):
            raise FlagNameConflictsWithMethodError(
                f'Cannot define a flag named "{flag.name}". It conflicts with a method on '
                f'class "{type(self).__name__}".'
            )
        self._flags[flag.name] = flag

    def __getitem__(self, name: str) -> Flag:
        return self._flags[name]

    def __contains__(self, name: str) -> bool:
        return name in self._flags

    def __iter__(self):
        return iter(self._flags)

    def __len__(self) -> int:
        return len(self._flags)

    def __getattr__(self, name: str):
        flag = self._flags.get(name)
        if flag is None:
            raise AttributeError(name)
        if not self._parsed:
            raise UnparsedFlagAccessError(
                f"Trying to access flag --{name} before flags were parsed."
            )
        return flag.value

    def __setattr__(self, name: str, value) -> None:
        flag = self._flags.get(name)
        if flag is None:
            raise UnrecognizedFlagError(name, str(value))
        flag.value = value
        flag.using_default_value = False

    def is_parsed(self) -> bool:
        return self._parsed

    def mark_as_parsed(self) -> None:
        self.__dict__["_parsed"] = True

    def unparse_flags(self) -> None:
        for flag in self._flags.values():
            flag.unparse()
        self.__dict__["_parsed"] = False

    def flag_values_dict(self) -> dict:
        """``{name: value}`` of every flag."""
        return {name: flag.value for name, flag in self._flags.items()}

    def get_flag_value(self, name: str, default):
        flag = self._flags.get(name)
        return default if flag is None else flag.value

    # -- parsing --------------------------------------------------------------------------
    def __call__(self, argv: Sequence[str], known_only: bool = False) -> list[str]:
        if isinstance(argv, (str, bytes)):
            raise TypeError("argv should be a tuple/list of strings, not bytes or string.")
        if not argv:
            raise ValueError(
                "argv cannot be an empty list, and must contain the program name as the first "
                "element."
            )
        rest = self._parse_args(list(argv[1:]), known_only)
        self.mark_as_parsed()
        self.validate_all_flags()
        return [argv[0], *rest]

    def _parse_args(self, args: list[str], known_only: bool) -> list[str]:
        rest, i = [], 0
        while i < len(args):
            arg = args[i]
            i += 1
            if arg == "--":
                return rest + args[i:]
            if not arg.startswith("-") or arg == "-":
                rest.append(arg)
                continue
            name, eq, value = arg.lstrip("-").partition("=")
            flag = self._flags.get(name)
            if flag is not None and not flag.boolean and not eq:
                if i >= len(args):
                    raise Error(f"Missing value for flag {arg}")
                value, i = args[i], i + 1
            if not self._apply(name, flag, value if (eq or flag) else None, eq):
                if not known_only:
                    raise UnrecognizedFlagError(name, value, self._suggest(name))
                rest.append(arg)
        return rest

    def _apply(self, name: str, flag: Flag | None, value, has_value: str) -> bool:
        """Sets ``--name[=value]``; False when no flag (or ``--noname`` bool) matches."""
        if flag is not None:
            flag.parse(value if (has_value or not flag.boolean) else "true")
            return True
        negated = self._flags.get(name[2:]) if name.startswith("no") else None
        if negated is None or not negated.boolean:
            return False
        if has_value:
            raise ValueError(f"--{name}={value} does not take an argument")
        negated.parse("false")
        return True

    def _suggest(self, name: str) -> list[str]:
        """absl's suggestions: the flags whose prefix is nearest to ``name`` in edit distance,
        if fewer than half its letters differ."""
        if len(name) <= 2 or not self._flags:
            return []
        ranked = sorted((_edit_distance(name, flag[: len(name)]), flag) for flag in self._flags)
        least = ranked[0][0]
        if least >= 0.5 * len(name):
            return []
        return [flag for dist, flag in ranked if dist == least]

    def validate_all_flags(self) -> None:
        for name in self._required:
            if self._flags[name].value is None:
                raise IllegalFlagValueError(
                    f"flag --{name}=None: Flag --{name} must have a value other than None."
                )

    def main_module_help(self) -> str:
        lines = []
        for name, flag in sorted(self._flags.items()):
            lines.append(f"  --{name}: {flag.help}\n    (default: {flag.default!r})")
        return "\n".join(lines)


class _ParseOnReadFlagValues(FlagValues):
    """TF1's ``FLAGS``: the first read of a flag parses ``sys.argv`` (strictly, as TF does)."""

    def __getattr__(self, name: str):
        if not self._parsed and name in self._flags:
            self(sys.argv)
        return super().__getattr__(name)


FLAGS = _ParseOnReadFlagValues()


def _define(flag: Flag, flag_values: FlagValues | None) -> FlagHolder:
    fv = FLAGS if flag_values is None else flag_values
    fv._register(flag)
    return FlagHolder(fv, flag)


def DEFINE_string(name, default, help, flag_values=None, **_):  # noqa: N802, A002
    """A flag whose value is a string."""
    return _define(Flag(str, name, default, help), flag_values)


def _range_help(kind: str, lower, upper) -> str:
    """absl's wording for a bounded number flag: "a non-negative integer", ..."""
    if lower == 0 and upper is None:
        return f"a non-negative {kind}"
    if lower == 1 and upper is None:
        return f"a positive {kind}"
    if upper == -1 and lower is None:
        return f"a negative {kind}"
    if upper == 0 and lower is None:
        return f"a non-positive {kind}"
    if lower is not None and upper is not None:
        return f"{'an' if kind == 'integer' else 'a'} {kind} in the range [{lower}, {upper}]"
    if lower is not None:
        return f"{kind} >= {lower}"
    return f"{kind} <= {upper}"


def _bounded(parse, kind, lower_bound, upper_bound):
    def check(text):
        value = parse(text)
        too_low = lower_bound is not None and value < lower_bound
        if too_low or (upper_bound is not None and value > upper_bound):
            raise ValueError(f"{value} is not {_range_help(kind, lower_bound, upper_bound)}")
        return value

    return check


def DEFINE_integer(  # noqa: N802
    name,
    default,
    help,
    lower_bound=None,
    upper_bound=None,
    flag_values=None,
    **_,  # noqa: A002
):
    """A flag whose value is an int (decimal or ``0x`` hex), optionally bounded."""
    parse = _bounded(_parse_int, "integer", lower_bound, upper_bound)
    return _define(Flag(parse, name, default, help), flag_values)


def DEFINE_float(  # noqa: N802
    name,
    default,
    help,
    lower_bound=None,
    upper_bound=None,
    flag_values=None,
    **_,  # noqa: A002
):
    """A flag whose value is a float, optionally bounded."""
    parse = _bounded(_parse_float, "number", lower_bound, upper_bound)
    return _define(Flag(parse, name, default, help), flag_values)


def DEFINE_boolean(name, default, help, flag_values=None, **_):  # noqa: N802, A002
    """A flag set by ``--name``/``--noname`` or ``--name=true|false``."""
    return _define(Flag(_parse_bool, name, default, help, boolean=True), flag_values)


DEFINE_bool = DEFINE_boolean


def DEFINE_enum(name, default, enum_values, help, flag_values=None, **_):  # noqa: N802, A002
    """A string flag whose value must be one of ``enum_values``."""
    if not enum_values:
        raise ValueError(f'enum_values cannot be empty, found "{enum_values}"')
    values = list(enum_values)

    def parse(text):
        if text not in values:
            raise ValueError(f"value should be one of <{'|'.join(values)}>")
        return text

    return _define(Flag(parse, name, default, help), flag_values)


def DEFINE_list(name, default, help, flag_values=None, **_):  # noqa: N802, A002
    """A flag whose value is a comma-separated list of strings."""
    return _define(Flag(_parse_list, name, default, help), flag_values)


def DEFINE_multi_string(name, default, help, flag_values=None, **_):  # noqa: N802, A002
    """A flag that may repeat; its value is the list of strings given."""
    return _define(MultiFlag(str, name, default, help), flag_values)


def DEFINE_multi_integer(name, default, help, flag_values=None, **_):  # noqa: N802, A002
    """A flag that may repeat; its value is the list of ints given."""
    return _define(MultiFlag(_parse_int, name, default, help), flag_values)


def DEFINE_multi_float(name, default, help, flag_values=None, **_):  # noqa: N802, A002
    """A flag that may repeat; its value is the list of floats given."""
    return _define(MultiFlag(_parse_float, name, default, help), flag_values)


def mark_flag_as_required(flag_name: str, flag_values: FlagValues | None = None) -> None:
    """Parsing fails unless ``flag_name`` ends up with a value other than None."""
    fv = FLAGS if flag_values is None else flag_values
    flag = fv[flag_name]
    if flag.default is not None:
        warnings.warn(
            f"Flag --{flag_name} has a non-None default value; therefore, mark_flag_as_required "
            "will pass even if flag is not specified in the command line!",
            stacklevel=2,
        )
    if flag_name not in fv._required:
        fv._required.append(flag_name)


def mark_flags_as_required(flag_names: Sequence[str], flag_values: FlagValues | None = None):
    for name in flag_names:
        mark_flag_as_required(name, flag_values)


def _reset_for_tests() -> FlagValues:
    """Empties the global ``FLAGS`` (every flag undefined, unparsed): a fresh registry per
    test. Returns it."""
    FLAGS._flags.clear()
    FLAGS._required.clear()
    FLAGS.__dict__["_parsed"] = False
    return FLAGS
