// Apache Paimon's own REST catalog server (org.apache.paimon.rest.RESTCatalogServer, shipped in
// paimon-core's test jar) on loopback over a local warehouse directory, for the catalogs test tier.
//
// Usage: RestCatalogServerLauncher DATA_PATH WAREHOUSE_NAME TOKEN [DATA_TOKEN_ENABLED]
// Prints one JSON line {"url": ..., "warehouse": ..., "token": ..., "prefix": ...} once the server
// answers, then serves until its stdin closes (so a test process that dies never leaves it behind).
// Clients authenticate with a bearer token (token.provider=bear, token=TOKEN). The server keeps its
// catalog (databases, tables, table ids, snapshots committed through it) in memory: it lives for
// one test session; the table files live under DATA_PATH.

import java.io.InputStream;
import java.io.PrintStream;
import java.util.HashMap;
import java.util.Map;

import org.apache.paimon.options.CatalogOptions;
import org.apache.paimon.rest.RESTCatalogInternalOptions;
import org.apache.paimon.rest.RESTCatalogServer;
import org.apache.paimon.rest.RESTTokenFileIO;
import org.apache.paimon.rest.auth.BearTokenAuthProvider;
import org.apache.paimon.rest.responses.ConfigResponse;

public final class RestCatalogServerLauncher {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: RestCatalogServerLauncher DATA_PATH WAREHOUSE_NAME TOKEN [DATA_TOKEN_ENABLED]");
            System.exit(2);
        }
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err); // the server's own printing never corrupts the one protocol line
        String dataPath = args[0];
        String warehouse = args[1];
        String token = args[2];
        boolean dataToken = args.length > 3 && Boolean.parseBoolean(args[3]);
        String prefix = "paimon";
        Map<String, String> defaults = new HashMap<>();
        defaults.put(RESTCatalogInternalOptions.PREFIX.key(), prefix);
        defaults.put(CatalogOptions.WAREHOUSE.key(), warehouse);
        defaults.put(RESTTokenFileIO.DATA_TOKEN_ENABLED.key(), Boolean.toString(dataToken));
        RESTCatalogServer server = new RESTCatalogServer(
                dataPath, new BearTokenAuthProvider(token), new ConfigResponse(defaults, new HashMap<>()), warehouse);
        // MockWebServer binds to the loopback address by default; start() picks a free port.
        server.start();
        String url = server.getUrl();
        out.println("{\"url\": \"" + url + "\", \"warehouse\": \"" + warehouse + "\", \"token\": \"" + token
                + "\", \"prefix\": \"" + prefix + "\", \"data_token\": " + dataToken + "}");
        out.flush();
        InputStream in = System.in;
        byte[] buffer = new byte[256];
        while (in.read(buffer) >= 0) {
            // Serve until the parent closes our stdin.
        }
        server.shutdown();
        System.exit(0);
    }
}
