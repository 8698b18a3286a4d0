-- "double" and `back` quoted identifiers and mixed case name the same columns and tables
-- answer: layout
-- order: exact
SELECT "D_YEAR", `c_Region`, Sum("LO_REVENUE") AS "Revenue", COUNT(*) AS `Lines`
FROM "SSB"."LINEORDER"
LEFT JOIN `ssb`.`dates` ON "LO_ORDERDATE" = `D_DateKey`
LEFT JOIN Ssb.Customer ON Lo_CustKey = "C_CUSTKEY"
WHERE "D_YEAR" >= 1997
GROUP BY "D_YEAR", `c_Region`
ORDER BY `d_year`, "C_REGION"
