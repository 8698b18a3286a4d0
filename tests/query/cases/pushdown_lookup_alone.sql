-- a lookup table alone (no snapshots in precube)
-- answer: pushdown
select count(*) as customers from ssb.customer
