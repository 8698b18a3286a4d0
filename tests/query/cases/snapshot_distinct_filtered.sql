-- distinct values of a lookup column under a filter (a filter dropdown), from the snapshot
-- answer: snapshot
select distinct c_nation from ssb.customer where c_region = 'ASIA' order by c_nation
