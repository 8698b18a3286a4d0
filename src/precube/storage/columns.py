"""Column names in flat tables and layout files: ids, never names, so renames never touch data.

- a model column (dimension or measure input) is named by its id: `"12"`;
- the global-dictionary id of a precise COUNT DISTINCT input column is `"12_dict"` (flat table only);
- a measure's cell is named by the measure id: `"100003"`; a precise COUNT DISTINCT cell also has
  its cardinality in `"100003_count"` so a query at the layout's own grain needs no bitmap.
"""

from __future__ import annotations


def column(column_id: int) -> str:
    return str(column_id)


def dict_column(column_id: int) -> str:
    return f"{column_id}_dict"


def measure_column(measure_id: int) -> str:
    return str(measure_id)


def count_column(measure_id: int) -> str:
    return f"{measure_id}_count"
