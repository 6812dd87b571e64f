"""``Record``: a small value class without generated code (layer 0: imports nothing)."""

from __future__ import annotations

__all__ = ["Record"]


class Record:
    """A small value class: attributes in ``__slots__``, compared and shown by them (what
    ``@dataclass(slots=True)`` gives, without generating code when acplink is imported: an
    agent's start-up is measured from spawn to its first answer)."""

    __slots__: tuple[str, ...] = ()
    #: mutable and compared by value, so not hashable
    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __repr__(self) -> str:
        names = getattr(self, "__match_args__", self.__slots__)  # (constructor order)
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in names)
        return f"{type(self).__name__}({fields})"
