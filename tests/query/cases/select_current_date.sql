-- SELECT without a table: CURRENT_DATE, a function of a literal, arithmetic
-- answer: layout
select current_date as today, upper('a') as a, 1 + 1 as two, cast(current_timestamp as date) as also_today
