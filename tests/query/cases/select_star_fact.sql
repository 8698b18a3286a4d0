-- SELECT * of the fact table: its own columns only, not the model's computed columns
-- answer: pushdown
select * from ssb.lineorder where lo_orderkey < 40
