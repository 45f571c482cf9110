"""A study's output variables, each declared once in its module's ``OUTPUTS`` (``StudyVariable``:
dims, units and description). The study builds its Dataset from them (``build``), so the Dataset,
its zarr store, the JSON (``--json``) and its sweep kind (``Variable``, ``sweep_output``:
``fastsim.sweeping.variables``) carry the same units and words."""
from __future__ import annotations

from dataclasses import dataclass

import xarray as xr


@dataclass(frozen=True)
class StudyVariable:
    """One output of a study's Dataset: its dims, units and words."""
    dims: tuple[str, ...]
    units: str
    description: str


@dataclass(frozen=True)
class Variable:
    """A variable a sweep point stores (``fastsim.sweeping.variables``): over the sweep's axes and
    ``extra_dim``, with its units, words and dtype."""
    name: str
    units: str
    description: str
    dtype: str = "float64"
    extra_dim: tuple[str, tuple[str, ...]] | None = None  # (dim name, labels) beyond the axes
    flags: tuple[str, ...] = ()  # an integer code's meanings (CF flag_values / flag_meanings)

    def attrs(self) -> dict:
        out = {"units": self.units, "description": self.description}
        if self.flags:
            out.update(flag_values=list(range(len(self.flags))), flag_meanings=" ".join(self.flags))
        return out


def sweep_output(outputs: dict, name: str, **kw) -> Variable:
    """A study's output (``outputs[name]``) as its sweep kind stores it, with the units and words
    the study's own Dataset declares."""
    v = outputs[name]
    return Variable(name, v.units, v.description, **kw)


def build(outputs: dict, data: dict, coords: dict, attrs: dict) -> xr.Dataset:
    """The study's Dataset from plain arrays: dims, units and description of every variable from
    its ``outputs`` (a variable that is not declared there is an error)."""
    unknown = sorted(set(data) - set(outputs))
    if unknown:
        raise KeyError(f"{attrs.get('study', '?')}: variables not declared in its OUTPUTS: {unknown}")
    return xr.Dataset({name: (outputs[name].dims, value, {"units": outputs[name].units,
                                                         "description": outputs[name].description})
                       for name, value in data.items()}, coords=coords, attrs=attrs)
