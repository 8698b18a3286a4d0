-- the projection as a CTE, comma-joined with its condition in WHERE, ordered by an aggregate
-- answer: layout
-- order: exact
with asia as (select c_custkey, c_nation from ssb.customer where c_region = 'ASIA')
select asia.c_nation, count(*) as lines, max(lo_discount) as top_discount
from ssb.lineorder, asia
where lo_custkey = asia.c_custkey
group by asia.c_nation
order by lines desc, asia.c_nation
