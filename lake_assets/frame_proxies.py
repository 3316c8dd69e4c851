"""LakeFrame and its writer, apart from the Session that makes them: proxies with stream reads."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from pyspark.sql import DataFrame

from lake_assets.frame_inputs import checked_save_mode
from lake_assets.streams.reading import StreamRead

# PySpark objects, besides DataFrames, whose methods return DataFrames (df.groupBy(…).agg(…)).
_HELPERS = frozenset(
    {"GroupedData", "PandasCogroupedOps", "DataFrameNaFunctions", "DataFrameStatFunctions"}
)


class FrameSaver(Protocol):
    """What a frame needs of its Session (lake_assets.frames): where `save_as_table` goes."""

    def save(self, frame: LakeFrame, name: str, mode: str) -> None: ...


class _Carrier:
    """A PySpark object behind a proxy: every attribute forwarded, and every DataFrame its
    methods return wrapped again, with the stream reads of this object and of its arguments."""

    __slots__ = ("_reads", "_session", "_target")

    def __init__(self, target: Any, session: FrameSaver, reads: Iterable[StreamRead] = ()) -> None:
        self._target = target
        self._session = session
        self._reads = tuple(dict.fromkeys(reads))

    def __getattr__(self, name: str) -> Any:
        if name in _Carrier.__slots__:  # not set yet (copy, pickle): no forwarding loop
            raise AttributeError(name)
        return _carried(getattr(self._target, name), self._session, self._reads)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(self._target)) | set(super().__dir__()))

    def __repr__(self) -> str:
        return repr(self._target)


class LakeFrame(_Carrier):
    """A PySpark DataFrame with PySpark's whole API, that knows the stream ranges it reads."""

    __slots__ = ()

    @property
    def dataframe(self) -> DataFrame:
        """The PySpark DataFrame itself (for APIs that check its type)."""
        return self._target

    @property
    def stream_reads(self) -> tuple[StreamRead, ...]:
        """The pinned stream ranges this frame's rows come from, each once."""
        return self._reads

    @property
    def write(self) -> LakeWriter:
        return LakeWriter(self)

    def __getitem__(self, item: Any) -> Any:
        return _forwarding(self._target.__getitem__, self._session, self._reads)(item)


class LakeWriter:
    """`frame.write`: `save_as_table` (and `saveAsTable`) write a catalog table and consume the
    frame's streams; every other method is PySpark's DataFrameWriter's."""

    __slots__ = ("_frame", "_mode", "_writer")

    def __init__(self, frame: LakeFrame) -> None:
        self._frame = frame
        self._writer = frame.dataframe.write
        self._mode = "errorifexists"

    def mode(self, save_mode: str | None) -> LakeWriter:
        """The mode of the save that follows, as in PySpark (checked here, with our message)."""
        self._mode = checked_save_mode(save_mode or "errorifexists")
        self._writer.mode(self._mode)
        return self

    def save_as_table(self, table_name: str, mode: str | None = None) -> None:
        """Append to, overwrite, or create the catalog table (errorifexists, PySpark's default,
        when no mode is given); PySpark writer options do not apply to it."""
        self._frame._session.save(self._frame, table_name, mode or self._mode)

    saveAsTable = save_as_table  # PySpark's spelling

    def __getattr__(self, name: str) -> Any:
        if name in LakeWriter.__slots__:
            raise AttributeError(name)
        value = getattr(self._writer, name)
        if not inspect.ismethod(value):
            return value

        @functools.wraps(value)
        def chained(*args: Any, **kwargs: Any) -> Any:
            result = value(*args, **kwargs)
            return self if result is self._writer else result

        return chained


def _carried(value: Any, session: FrameSaver, reads: tuple[StreamRead, ...]) -> Any:
    """`value` wrapped when it is or can make a DataFrame; anything else as it is."""
    if isinstance(value, DataFrame):
        return LakeFrame(value, session, reads)
    if isinstance(value, list) and value and all(isinstance(v, DataFrame) for v in value):
        return [LakeFrame(v, session, reads) for v in value]  # randomSplit
    kind = type(value)
    if kind.__name__ in _HELPERS and kind.__module__.startswith("pyspark."):
        return _Carrier(value, session, reads)
    if inspect.ismethod(value):
        return _forwarding(value, session, reads)
    return value


def _forwarding(
    method: Callable[..., Any], session: FrameSaver, reads: tuple[StreamRead, ...]
) -> Callable[..., Any]:
    """`method` taking proxies as arguments (joins, unions), its result carrying their reads."""

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        found = list(reads)
        plain_args = [_plain(arg, found) for arg in args]
        plain_kwargs = {key: _plain(value, found) for key, value in kwargs.items()}
        return _carried(method(*plain_args, **plain_kwargs), session, tuple(found))

    return call


def _plain(value: Any, reads: list[StreamRead]) -> Any:
    """The PySpark object behind a proxy (or in a list of them), its reads added to `reads`."""
    if isinstance(value, _Carrier):
        reads.extend(value._reads)
        return value._target
    if isinstance(value, list | tuple):
        return type(value)(_plain(item, reads) for item in value)
    return value
