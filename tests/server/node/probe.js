// node-postgres (pg) against precube's Postgres wire: lists the catalog through information_schema and runs
// the SSB queries through the simple protocol and as named prepared statements (the extended protocol), and one
// query with a $1 parameter. Writes what it read as JSON for tests/server/test_node_pg.py to compare.
// usage: node probe.js PORT PROJECT USER PASSWORD QUERIES.json OUT.json
'use strict'
const fs = require('fs')
const { Client } = require('pg')

const [port, project, user, password, queriesPath, outPath] = process.argv.slice(2)
const asText = { getTypeParser: () => (value) => value } // every value as the server's text: compared in Python

async function answer(client, config) {
  const result = await client.query({ ...config, types: asText, rowMode: 'array' })
  return { fields: result.fields.map((f) => [f.name, f.dataTypeID]), rows: result.rows, command: result.command }
}

async function main() {
  const client = new Client({ host: '127.0.0.1', port: Number(port), database: project, user, password })
  await client.connect()
  const out = { simple: {}, prepared: {} }
  try {
    out.schemata = (await client.query('select schema_name from information_schema.schemata order by 1')).rows
    out.tables = (
      await client.query(
        "select table_schema, table_name, table_type from information_schema.tables where table_schema = 'ssb' order by 2"
      )
    ).rows
    out.columns = (
      await client.query(
        'select table_name, column_name, data_type, ordinal_position from information_schema.columns ' +
          "where table_schema = $1 order by table_name, ordinal_position",
        ['ssb']
      )
    ).rows
    const queries = JSON.parse(fs.readFileSync(queriesPath, 'utf8'))
    for (const [name, sql] of Object.entries(queries)) {
      out.simple[name] = await answer(client, { text: sql })
      out.prepared[name] = await answer(client, { name: `ssb_${name}`, text: sql })
    }
    const nation = 'select c_region, count(*) as n from ssb.customer where c_nation = $1 group by c_region'
    out.parameter = await answer(client, { text: nation, values: ['CHINA'] })
    out.typed = (await client.query('select count(*) as n, min(d_datekey) as first from ssb.dates')).rows[0]
    out.typed.first = out.typed.first instanceof Date ? 'Date' : typeof out.typed.first
    try {
      await client.query('select nope from ssb.lineorder')
    } catch (err) {
      out.error = { code: err.code, message: err.message }
    }
  } finally {
    await client.end()
  }
  fs.writeFileSync(outPath, JSON.stringify(out))
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
