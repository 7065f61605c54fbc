package io.coord.it;

import io.coord.testkit.ZooKeeperFixture;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.curator.drivers.TracerDriver;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryNTimes;

/**
 * A ZooKeeper server of an older release, run as a process of its own from the jars that the build copies (see
 * coord-it's pom), since two ZooKeeper versions cannot share one classpath.
 */
final class OldServer {
    private final Process process;
    private final int port;

    private OldServer(Process process, int port) {
        this.process = process;
        this.port = port;
    }

    /** A server from before persistent watches (3.5). */
    static OldServer start() throws IOException {
        return start("old-zookeeper.lib");
    }

    /**
     * Starts the server whose jars the system property {@code libProperty} names, on a free port, with its data and
     * log in a fresh folder under the build directory.
     */
    static OldServer start(String libProperty) throws IOException {
        String lib = System.getProperty(libProperty);
        if (lib == null || !Files.isDirectory(Paths.get(lib))) {
            throw new IllegalStateException(libProperty + " names no folder (" + lib + "): run through Maven");
        }
        Path home = Files.createTempDirectory(
                Paths.get(lib).getParent(), Paths.get(lib).getFileName() + "-");
        int port = freePort();
        String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        Process process = new ProcessBuilder(List.of(
                        java,
                        "-Dzookeeper.4lw.commands.whitelist=*",
                        "-Dzookeeper.admin.enableServer=false", // it would need Jetty
                        "-cp",
                        lib + "/*",
                        "org.apache.zookeeper.server.ZooKeeperServerMain",
                        Integer.toString(port),
                        home.resolve("data").toString()))
                .redirectErrorStream(true)
                .redirectOutput(home.resolve("server.log").toFile())
                .start();
        return new OldServer(process, port);
    }

    String connectString() {
        return "127.0.0.1:" + port;
    }

    /**
     * A started client of this server, connected, with the fixture's session and retries; {@code tracer}, if any,
     * counts its requests.
     */
    CuratorFramework newClient(TracerDriver tracer) throws InterruptedException {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connectString())
                .sessionTimeoutMs((int) ZooKeeperFixture.SESSION_TIMEOUT.toMillis())
                .connectionTimeoutMs(2_000)
                .retryPolicy(new RetryNTimes(20, 100))
                .ensembleTracker(false)
                .build();
        if (tracer != null) {
            client.getZookeeperClient().setTracerDriver(tracer);
        }
        client.start();
        // The first test waits for the server process to come up.
        if (!client.blockUntilConnected(60, TimeUnit.SECONDS)) {
            client.close();
            throw new IllegalStateException("could not connect to " + connectString());
        }
        return client;
    }

    void stop() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor();
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }
}
