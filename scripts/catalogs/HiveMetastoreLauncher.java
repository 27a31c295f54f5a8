// Apache Hive's standalone metastore (hive-standalone-metastore-server) for the catalogs test tier.
//
// Usage: HiveMetastoreLauncher -p PORT   (with a metastore-site.xml first on the classpath)
// Runs HiveMetaStore.main in this JVM and exits when its stdin closes, so a test process that dies
// never leaves a metastore behind (the same contract as scripts/stores/MiniHdfs.java).

import java.io.InputStream;

public final class HiveMetastoreLauncher {
    public static void main(String[] args) throws Throwable {
        Thread watcher = new Thread(() -> {
            InputStream in = System.in;
            byte[] buffer = new byte[256];
            try {
                while (in.read(buffer) >= 0) {
                    // Wait until the parent closes our stdin.
                }
            } catch (java.io.IOException ignored) {
                // A broken stdin means the parent is gone as well.
            }
            // halt: the metastore's shutdown hooks wait for its thread pools; its Derby database is a
            // per-session copy, thrown away after this.
            Runtime.getRuntime().halt(0);
        }, "stdin-watcher");
        watcher.setDaemon(true);
        watcher.start();
        org.apache.hadoop.hive.metastore.HiveMetaStore.main(args);
    }
}
