-- COUNT(1), COUNT(NULL), SUM of constants per year: COUNT(NULL) is 0, never the row count; SUM(2.5) is a DECIMAL
-- answer: layout
select d_year, count(1) as c1, count(null) as c_null, count(*) as c_star, sum(1) as s1, sum(-2) as s2, sum(2.5) as s25
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
