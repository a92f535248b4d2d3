"""Topic attributes as RocketMQ 5 has them (common.attribute: Attribute, EnumAttribute, LongRangeAttribute,
AttributeParser, AttributeUtil).

An admin sends a modification string, ``+key=value,+key2=value2,-key3`` (CreateTopicRequestHeader.attributes);
``parse_to_map`` keeps the signs, ``alter_current_attributes`` applies them to a topic's current attributes
(plain keys) after checking each against the attributes the broker knows. Every refusal is an
``AttributeError_`` whose text is RocketMQ's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

ATTR_ARRAY_SEPARATOR_COMMA = ","
ATTR_KEY_VALUE_EQUAL_SIGN = "="
ATTR_ADD_PLUS_SIGN = "+"
ATTR_DELETE_MINUS_SIGN = "-"


class AttributeError_(ValueError):  # noqa: N801 (the built-in AttributeError means something else)
    """A modification RocketMQ refuses (its RuntimeException text)."""


@dataclass(frozen=True, slots=True)
class Attribute:
    """RocketMQ's Attribute: a topic attribute the broker knows; ``verify`` checks a value."""

    name: str
    changeable: bool

    def verify(self, value: str) -> None:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class EnumAttribute(Attribute):
    """RocketMQ's EnumAttribute: an attribute whose value is one of a set."""

    universe: frozenset[str]
    default_value: str

    def verify(self, value: str) -> None:
        if value not in self.universe:
            raise AttributeError_(f"value is not in set: [{', '.join(sorted(self.universe))}]")


@dataclass(frozen=True, slots=True)
class LongRangeAttribute(Attribute):
    """RocketMQ's LongRangeAttribute: an attribute whose value is a long within a range."""

    min: int
    max: int
    default_value: int

    def verify(self, value: str) -> None:
        try:
            number = int(value)
        except ValueError:
            raise AttributeError_(f'For input string: "{value}"') from None
        if not self.min <= number <= self.max:
            raise AttributeError_(f"value is not in range({self.min}, {self.max})")


def parse_to_map(modification: str | None) -> dict[str, str]:
    """``+k1=v1,-k2`` -> ``{"+k1": "v1", "-k2": ""}`` (AttributeParser.parseToMap)."""
    if not modification:
        return {}
    attributes: dict[str, str] = {}
    for kv in modification.split(ATTR_ARRAY_SEPARATOR_COMMA):
        if ATTR_KEY_VALUE_EQUAL_SIGN in kv:
            key, _, value = kv.partition(ATTR_KEY_VALUE_EQUAL_SIGN)
            value = value.split(ATTR_KEY_VALUE_EQUAL_SIGN)[0]  # (Java's split keeps the second piece only)
            if ATTR_ADD_PLUS_SIGN not in key:
                raise AttributeError_(f"add/alter attribute format is wrong: {key}")
        else:
            key, value = kv, ""
            if ATTR_DELETE_MINUS_SIGN not in key:
                raise AttributeError_(f"delete attribute format is wrong: {key}")
        if key in attributes:
            raise AttributeError_(f"key duplication: {key}")
        attributes[key] = value
    return attributes


def parse_to_string(attributes: Mapping[str, str] | None) -> str:
    """The inverse of parse_to_map (AttributeParser.parseToString)."""
    if not attributes:
        return ""
    return ATTR_ARRAY_SEPARATOR_COMMA.join(
        key if not value else f"{key}{ATTR_KEY_VALUE_EQUAL_SIGN}{value}" for key, value in attributes.items()
    )


def signed_attributes(attributes: Mapping[str, str]) -> dict[str, str]:
    """Modifications from a map whose keys may lack their sign: a plain key is an addition."""
    return {
        k if k.startswith((ATTR_ADD_PLUS_SIGN, ATTR_DELETE_MINUS_SIGN)) else ATTR_ADD_PLUS_SIGN + k: v
        for k, v in attributes.items()
    }


def alter_current_attributes(
    create: bool, known: Mapping[str, Attribute], current: Mapping[str, str], modifications: Mapping[str, str]
) -> dict[str, str]:
    """The attributes after ``modifications`` (signed keys) (AttributeUtil.alterCurrentAttributes)."""
    init: dict[str, str] = {}
    add: dict[str, str] = {}
    update: dict[str, str] = {}
    delete: dict[str, str] = {}
    seen: set[str] = set()
    for key, value in modifications.items():
        real_key = key[1:]
        _validate_key(real_key)
        if real_key in seen:
            raise AttributeError_(f"alter duplication key. key: {real_key}")
        seen.add(real_key)
        if create:
            if not key.startswith(ATTR_ADD_PLUS_SIGN):
                raise AttributeError_(f"only add attribute is supported while creating topic. key: {real_key}")
            init[real_key] = value
        elif key.startswith(ATTR_ADD_PLUS_SIGN):
            (update if real_key in current else add)[real_key] = value
        elif key.startswith(ATTR_DELETE_MINUS_SIGN):
            if real_key not in current:
                raise AttributeError_(f"attempt to delete a nonexistent key: {real_key}")
            delete[real_key] = value
        else:
            raise AttributeError_(f"wrong format key: {real_key}")
    _validate_alter(known, init, init=True, delete=False)
    _validate_alter(known, add, init=False, delete=False)
    _validate_alter(known, update, init=False, delete=False)
    _validate_alter(known, delete, init=False, delete=True)
    final = {**current, **init, **add, **update}
    for key in delete:
        final.pop(key, None)
    return final


def _validate_key(real_key: str) -> None:
    if not real_key or ATTR_ADD_PLUS_SIGN in real_key or ATTR_DELETE_MINUS_SIGN in real_key:
        raise AttributeError_("kv string format wrong.")


def _validate_alter(known: Mapping[str, Attribute], alter: Mapping[str, str], init: bool, delete: bool) -> None:
    for key, value in alter.items():
        attribute = known.get(key)
        if attribute is None:
            raise AttributeError_(f"unsupported key: {key}")
        if not init and not attribute.changeable:
            raise AttributeError_(f"attempt to update an unchangeable attribute. key: {key}")
        if not delete:
            attribute.verify(value)
