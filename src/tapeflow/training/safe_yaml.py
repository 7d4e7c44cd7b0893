"""A config's YAML, read so that no file can run code, hang, exhaust memory or crash the reader.

YAML's safe loader already refuses tags that build Python objects. What it allows and this
module refuses, each as one ``ConfigError`` naming the file and line:

- a file over ``MAX_BYTES`` (read no further: the pure-Python parser takes minutes on 10 MB);
- a document that expands past ``MAX_VALUES`` values: aliases share one parsed node, but the
  config is a tree, so a 446-byte alias bomb would expand to 10**9 values. Sizes are counted on
  the parsed nodes, each shared node once, before anything is expanded;
- nesting deeper than ``MAX_DEPTH``, and an alias inside the value it names (``&r [*r]``);
- the same key twice in one mapping (YAML's rule; PyYAML keeps the last silently, so a second
  ``training:`` section replaced the first);
- an integer of more than ``MAX_INT_DIGITS`` digits (no config value is near one; Python's own
  limit would raise a bare ValueError at 4300).
"""
import re

import yaml

from .errors import ConfigError

__all__ = ["MAX_BYTES", "MAX_DEPTH", "read_yaml", "load_yaml", "dump_yaml"]

MAX_BYTES = 1 << 20        # the shipped configs are under 2 kB
MAX_VALUES = 100_000       # after expanding aliases: keys, values and list items
MAX_DEPTH = 64
MAX_INT_DIGITS = 30
_MERGE = "tag:yaml.org,2002:merge"


class _Refused(yaml.YAMLError):
    """A document this reader will not build; ``mark`` says where."""

    def __init__(self, problem, mark):
        super().__init__(problem)
        self.problem, self.problem_mark = problem, mark


class _Loader(yaml.SafeLoader):
    """YAML's safe loader, reading ``1e-3`` as a float as YAML 1.2 does (1.1 reads a string),
    refusing duplicate keys and huge integers."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first_line = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE or not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = (key_node.tag, key_node.value)
                if key in first_line:
                    raise _Refused(f"duplicate key '{key_node.value}' (first given on line "
                                   f"{first_line[key] + 1})", key_node.start_mark)
                first_line[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node):
        digits = sum(c.isdigit() for c in node.value)
        if digits > MAX_INT_DIGITS:
            raise _Refused(f"an integer of {digits} digits is out of range", node.start_mark)
        return super().construct_yaml_int(node)


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                  |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                  |\.[0-9_]+(?:[eE][-+][0-9]+)?
                  |[-+]?\.(?:inf|Inf|INF)
                  |\.(?:nan|NaN|NAN))$""", re.X),
    list("-+0123456789."))


def _measure(node, depth, on_path, measured):
    """(values, height) of ``node`` as a tree: each shared node measured once."""
    if depth > MAX_DEPTH:
        raise _Refused(f"nested more than {MAX_DEPTH} levels deep", node.start_mark)
    key = id(node)
    if key in on_path:
        raise _Refused("an alias inside the value it names (a recursive alias)", node.start_mark)
    if key not in measured:
        if isinstance(node, yaml.ScalarNode):
            children = []
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        else:
            children = [part for pair in node.value for part in pair]
        on_path.add(key)
        sizes = [_measure(child, depth + 1, on_path, measured) for child in children]
        on_path.discard(key)
        measured[key] = (1 + sum(s for s, _ in sizes), 1 + max((h for _, h in sizes), default=0))
    values, height = measured[key]
    if values > MAX_VALUES:
        raise _Refused(f"the document expands to more than {MAX_VALUES:,} values (aliases "
                       f"repeat what they name)", node.start_mark)
    if depth + height > MAX_DEPTH + 1:
        raise _Refused(f"nested more than {MAX_DEPTH} levels deep", node.start_mark)
    return values, height


def load_yaml(text, where):
    """The document in ``text`` as plain Python values; any problem is a ``ConfigError``
    starting with ``where`` (the file, or ``--set ...``)."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _measure(node, 0, set(), {})
        return loader.construct_document(node)
    except RecursionError:  # the composer recurses once per level, before _measure can look
        raise ConfigError(f"{where}: nested more than {MAX_DEPTH} levels deep") from None
    except _Refused as e:
        raise ConfigError(f"{where}: line {e.problem_mark.line + 1}: {e.problem}") from None
    except yaml.constructor.ConstructorError as e:
        mark = e.problem_mark
        line = f"line {mark.line + 1}: " if mark is not None else ""
        raise ConfigError(f"{where}: {line}{e.problem} (configs are plain YAML: tags that "
                          f"build Python objects are refused, and nothing in a config is run)"
                          ) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e)
        raise ConfigError(f"{where}: {line}YAML syntax error: {problem}") from None
    finally:
        loader.dispose()


def read_yaml(path, where):
    """The YAML file at ``path``, refused unread past ``MAX_BYTES``."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read the config file ({e})") from None
    if len(text) > MAX_BYTES:
        raise ConfigError(f"{where}: larger than {MAX_BYTES // 1024} kB; a config is a few "
                          f"lines (data belongs in data.path)")
    return load_yaml(text, where)


def dump_yaml(doc):
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=None)
