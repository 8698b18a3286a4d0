-- SELECT without a table, outputs unnamed
-- answer: layout
select 1, 'x', current_date
