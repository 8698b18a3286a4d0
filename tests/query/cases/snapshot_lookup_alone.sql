-- a lookup table alone: answered from the lookup snapshot the build took, not from the source
-- answer: snapshot
select count(*) as customers from ssb.customer
