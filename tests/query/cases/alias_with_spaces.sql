-- a derived table under a quoted alias with spaces, as Tableau wraps custom SQL; its columns read through it
-- answer: layout
select "Custom SQL Query".d_year, "Custom SQL Query".revenue
from (select d_year, sum(lo_revenue) as revenue from lineorder left join dates on lo_orderdate = d_datekey group by d_year) "Custom SQL Query"
where "Custom SQL Query".d_year > 1993
