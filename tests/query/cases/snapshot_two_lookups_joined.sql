-- two lookups joined to each other (a join the model does not have): each read from its snapshot
-- answer: snapshot
select c.c_region, count(*) as pairs, count(distinct s.s_suppkey) as suppliers
from ssb.customer c
join ssb.supplier s on c.c_nation = s.s_nation
where s.s_region in ('ASIA', 'EUROPE')
group by c.c_region
