-- TOP_N by a lookup's string column under a filter on another: the cities of the largest supply cost in ASIA
-- answer: layout
-- order: exact
select c_city, sum(lo_supplycost) as cost
from ssb.lineorder
left join ssb.customer on lo_custkey = c_custkey
where c_region = 'ASIA'
group by c_city
order by cost desc, c_city
limit 7
