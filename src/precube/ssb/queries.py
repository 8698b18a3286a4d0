"""The 13 SSB queries as Kylin runs them (reference §7.1; the standard Q3.2), over the base tables:
`sum(v_revenue)` of Kylin's P_LINEORDER view is written `sum(lo_extendedprice * lo_discount)`."""

from __future__ import annotations

import re

_DATES = "from ssb.lineorder left join ssb.dates on lo_orderdate = d_datekey"
_PART = " left join ssb.part on lo_partkey = p_partkey"
_SUPPLIER = " left join ssb.supplier on lo_suppkey = s_suppkey"
_CUSTOMER = " left join ssb.customer on lo_custkey = c_custkey"
_Q1 = f"select sum(lo_extendedprice * lo_discount) as revenue {_DATES} where "
_Q2 = f"select sum(lo_revenue) as lo_revenue, d_year, p_brand {_DATES}{_PART}{_SUPPLIER} where "
_Q2_END = " group by d_year, p_brand order by d_year, p_brand"
_Q3_FROM = f"{_DATES}{_CUSTOMER}{_SUPPLIER}"
_Q3_END = " group by c_city, s_city, d_year order by d_year asc, lo_revenue desc"
_Q3_CITIES = "(c_city = 'UNITED KI1' or c_city = 'UNITED KI5') and (s_city = 'UNITED KI1' or s_city = 'UNITED KI5')"
_Q4_FROM = f"{_DATES}{_CUSTOMER}{_SUPPLIER}{_PART}"

SSB_QUERIES: dict[str, str] = {
    "Q1.1": _Q1 + "d_year = 1993 and lo_discount between 1 and 3 and lo_quantity < 25",
    "Q1.2": _Q1 + "d_yearmonthnum = 199401 and lo_discount between 4 and 6 and lo_quantity between 26 and 35",
    "Q1.3": _Q1
    + "d_weeknuminyear = 6 and d_year = 1994 and lo_discount between 5 and 7 and lo_quantity between 26 and 35",
    "Q2.1": _Q2 + "p_category = 'MFGR#12' and s_region = 'AMERICA'" + _Q2_END,
    "Q2.2": _Q2 + "p_brand between 'MFGR#2221' and 'MFGR#2228' and s_region = 'ASIA'" + _Q2_END,
    "Q2.3": _Q2 + "p_brand = 'MFGR#2239' and s_region = 'EUROPE'" + _Q2_END,
    "Q3.1": f"select c_nation, s_nation, d_year, sum(lo_revenue) as lo_revenue {_Q3_FROM} where c_region = 'ASIA' "
    "and s_region = 'ASIA' and d_year >= 1992 and d_year <= 1997 "
    "group by c_nation, s_nation, d_year order by d_year asc, lo_revenue desc",
    "Q3.2": f"select c_city, s_city, d_year, sum(lo_revenue) as lo_revenue {_Q3_FROM} where c_nation = 'UNITED STATES' "
    "and s_nation = 'UNITED STATES' and d_year >= 1992 and d_year <= 1997" + _Q3_END,
    "Q3.3": f"select c_city, s_city, d_year, sum(lo_revenue) as lo_revenue {_Q3_FROM} where {_Q3_CITIES} "
    "and d_year >= 1992 and d_year <= 1997" + _Q3_END,
    "Q3.4": f"select c_city, s_city, d_year, sum(lo_revenue) as lo_revenue {_Q3_FROM} where {_Q3_CITIES} "
    "and d_yearmonth = 'Dec1997'" + _Q3_END,
    "Q4.1": f"select d_year, c_nation, sum(lo_revenue) - sum(lo_supplycost) as profit {_Q4_FROM} "
    "where c_region = 'AMERICA' and s_region = 'AMERICA' and (p_mfgr = 'MFGR#1' or p_mfgr = 'MFGR#2') "
    "group by d_year, c_nation order by d_year, c_nation",
    "Q4.2": f"select d_year, s_nation, p_category, sum(lo_revenue) - sum(lo_supplycost) as profit {_Q4_FROM} "
    "where c_region = 'AMERICA' and s_region = 'AMERICA' and (d_year = 1997 or d_year = 1998) "
    "and (p_mfgr = 'MFGR#1' or p_mfgr = 'MFGR#2') group by d_year, s_nation, p_category "
    "order by d_year, s_nation, p_category",
    "Q4.3": f"select d_year, s_city, p_brand, sum(lo_revenue) - sum(lo_supplycost) as profit {_Q4_FROM} "
    "where c_region = 'AMERICA' and s_nation = 'UNITED STATES' and (d_year = 1997 or d_year = 1998) "
    "and p_category = 'MFGR#14' group by d_year, s_city, p_brand order by d_year, s_city, p_brand",
}

_LEFT_JOIN = re.compile(r" left join (\S+) on (\w+ = \w+)")


def comma_form(sql: str) -> str:
    """The query with its LEFT joins written as published: the tables listed after FROM, the join conditions
    first in WHERE (an INNER join)."""
    tables = [m.group(1) for m in _LEFT_JOIN.finditer(sql)]
    conditions = [m.group(2) for m in _LEFT_JOIN.finditer(sql)]
    head, where, rest = _LEFT_JOIN.sub("", sql).partition(" where ")
    if not where:
        raise ValueError(f"no WHERE in {sql!r}")
    return f"{', '.join([head, *tables])} where {' and '.join([*conditions, rest])}"


# The 13 queries in the published form (comma joins, INNER): same answers when every fact row has its
# lookup rows.
SSB_QUERIES_COMMA: dict[str, str] = {name: comma_form(sql) for name, sql in SSB_QUERIES.items()}
