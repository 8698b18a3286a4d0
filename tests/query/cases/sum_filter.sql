-- SUM under FILTER, several conditions on lookup dimensions side by side with the unfiltered SUM
-- answer: layout
select d_year,
    sum(lo_revenue) filter (where c_region = 'AMERICA') as america,
    sum(lo_revenue) filter (where c_region = 'EUROPE' and s_region <> 'EUROPE') as europe_imports,
    sum(lo_revenue) filter (where d_year = 1993) as only_1993,
    sum(lo_revenue) as total
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.customer on lo_custkey = c_custkey
left join ssb.supplier on lo_suppkey = s_suppkey
group by d_year
