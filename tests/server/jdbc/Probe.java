// pgjdbc (Debian's libpostgresql-jdbc-java) against precube's Postgres wire, run by test_pgjdbc.py as a
// single-file program: java -cp /usr/share/java/postgresql.jar Probe.java URL USER PASSWORD QUERIES.tsv
// QUERIES.tsv: one query a line, NAME <tab> SQL <tab> SQL with one ? <tab> int|string <tab> the ? value.
// Prints one JSON object a line: each DatabaseMetaData listing the catalog step of a JDBC tool reads, then
// each query's answer through a Statement and a PreparedStatement; a failure prints its SQLSTATE and goes on.
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

public class Probe {
    interface Listing {
        ResultSet open() throws SQLException;
    }

    public static void main(String[] args) throws Exception {
        try (Connection conn = DriverManager.getConnection(args[0], args[1], args[2])) {
            DatabaseMetaData meta = conn.getMetaData();
            emit("product", "{\"name\":" + quote(meta.getDatabaseProductName()) + ",\"version\":"
                    + quote(meta.getDatabaseProductVersion()) + ",\"driver\":" + quote(meta.getDriverVersion())
                    + ",\"schema\":" + quote(conn.getSchema()) + "}");
            try {
                emit("keywords", quote(meta.getSQLKeywords()));
            } catch (SQLException e) {
                emit("keywords", failure(e));
            }
            listing("schemas", meta::getSchemas);
            listing("tables", () -> meta.getTables(null, "ssb", "%", new String[] {"TABLE", "VIEW"}));
            listing("columns", () -> meta.getColumns(null, "ssb", "lineorder", "%"));
            listing("primary_keys", () -> meta.getPrimaryKeys(null, "ssb", "lineorder"));
            listing("imported_keys", () -> meta.getImportedKeys(null, "ssb", "lineorder"));
            listing("index_info", () -> meta.getIndexInfo(null, "ssb", "lineorder", false, true));
            listing("type_info", meta::getTypeInfo);
            listing("table_types", meta::getTableTypes);
            listing("catalogs", meta::getCatalogs);
            for (String line : Files.readAllLines(Path.of(args[3]))) {
                String[] q = line.split("\t", -1);
                listing("statement:" + q[0], () -> conn.createStatement().executeQuery(q[1]));
                listing("prepared:" + q[0], () -> {
                    PreparedStatement ps = conn.prepareStatement(q[2]);
                    if (q[3].equals("int")) {
                        ps.setInt(1, Integer.parseInt(q[4]));
                    } else {
                        ps.setString(1, q[4]);
                    }
                    return ps.executeQuery();
                });
            }
        }
    }

    static void listing(String name, Listing open) {
        try (ResultSet rs = open.open()) {
            ResultSetMetaData md = rs.getMetaData();
            int n = md.getColumnCount();
            List<String> columns = new ArrayList<>();
            for (int i = 1; i <= n; i++) {
                columns.add("[" + quote(md.getColumnLabel(i)) + "," + quote(md.getColumnTypeName(i)) + "]");
            }
            List<String> rows = new ArrayList<>();
            while (rs.next()) {
                List<String> row = new ArrayList<>();
                for (int i = 1; i <= n; i++) {
                    row.add(value(rs.getObject(i)));
                }
                rows.add("[" + String.join(",", row) + "]");
            }
            emit(name, "{\"columns\":[" + String.join(",", columns) + "],\"rows\":[" + String.join(",", rows) + "]}");
        } catch (SQLException e) {
            emit(name, failure(e));
        }
    }

    static String failure(SQLException e) {
        return "{\"sqlstate\":" + quote(e.getSQLState()) + ",\"error\":" + quote(e.getMessage()) + "}";
    }

    static void emit(String name, String body) {
        System.out.println("{\"name\":" + quote(name) + ",\"result\":" + body + "}");
    }

    // numbers as JSON numbers (a numeric's exact digits), everything else as its text
    static String value(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof Boolean) {
            return v.toString();
        }
        if (v instanceof BigDecimal) {
            return ((BigDecimal) v).toPlainString();
        }
        if (v instanceof Number) {
            return v.toString();
        }
        return quote(v.toString());
    }

    static String quote(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
