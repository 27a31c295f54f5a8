import java.io.File;
import java.io.InputStream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * Starts Hadoop's MiniDFSCluster (one NameNode, one DataNode, WebHDFS on) bound to loopback on free
 * ports, prints one JSON line with the ports, and stops the cluster when its stdin closes, so a test
 * process that dies never leaves a NameNode behind.
 */
public final class MiniHdfs {
    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: MiniHdfs BASE_DIR");
            System.exit(2);
        }
        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(args[0]).getAbsolutePath());
        conf.setBoolean("dfs.webhdfs.enabled", true);
        conf.set("dfs.namenode.rpc-bind-host", "127.0.0.1");
        conf.set("dfs.namenode.http-bind-host", "127.0.0.1");
        conf.set("dfs.datanode.address", "127.0.0.1:0");
        conf.set("dfs.datanode.http.address", "127.0.0.1:0");
        conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
        conf.set("dfs.datanode.hostname", "127.0.0.1");
        conf.setBoolean("dfs.datanode.use.datanode.hostname", false);
        conf.setInt("dfs.replication", 1);
        conf.setLong("dfs.blocksize", 1024L * 1024L);
        conf.setBoolean("dfs.permissions.enabled", true);
        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf)
                .numDataNodes(1)
                .nameNodePort(0)
                .nameNodeHttpPort(0)
                .format(true)
                .build();
        cluster.waitActive();
        int rpc = cluster.getNameNodePort();
        int http = cluster.getNameNode().getHttpAddress().getPort();
        System.out.println("{\"rpc_port\": " + rpc + ", \"http_port\": " + http + "}");
        System.out.flush();
        InputStream in = System.in;
        byte[] buffer = new byte[256];
        while (in.read(buffer) >= 0) {
            // Wait until the parent closes our stdin.
        }
        cluster.shutdown(true);
        System.exit(0);
    }
}
