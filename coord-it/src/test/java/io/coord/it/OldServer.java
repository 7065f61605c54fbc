package io.coord.it;

import io.coord.testkit.ZooKeeperEnsemble;
import io.coord.testkit.ZooKeeperFixture;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
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
        Path lib = lib(libProperty);
        Path home = Files.createTempDirectory(lib.getParent(), lib.getFileName() + "-");
        int port = ZooKeeperEnsemble.reservePorts(1).get(0);
        return new OldServer(
                launch(
                        lib,
                        home,
                        List.of(),
                        "org.apache.zookeeper.server.ZooKeeperServerMain",
                        Integer.toString(port),
                        home.resolve("data").toString()),
                port);
    }

    /**
     * Starts an ensemble of three servers of the release that {@code libProperty} names, each a process, on free
     * ports, with a tick of 500 ms and sessions of 1 to 20 s. Each server cut off from the quorum goes on serving reads
     * (readonlymode.enabled), to clients that accept a read-only connection.
     */
    static List<OldServer> startReadOnlyEnsemble(String libProperty) throws IOException, InterruptedException {
        Path lib = lib(libProperty);
        List<Integer> ports = ZooKeeperEnsemble.reservePorts(9); // per server: client, quorum, election
        StringBuilder peers = new StringBuilder();
        for (int id = 1; id <= 3; id++) {
            peers.append("server.").append(id).append("=127.0.0.1:").append(ports.get(3 * id - 2));
            peers.append(':').append(ports.get(3 * id - 1)).append('\n');
        }
        List<OldServer> servers = new ArrayList<>();
        try {
            for (int id = 1; id <= 3; id++) {
                Path home = Files.createTempDirectory(lib.getParent(), lib.getFileName() + "-" + id + "-");
                Path data = Files.createDirectories(home.resolve("data"));
                Files.writeString(data.resolve("myid"), Integer.toString(id));
                int clientPort = ports.get(3 * id - 3);
                Path config = Files.writeString(
                        home.resolve("zoo.cfg"),
                        "tickTime=500\nmaxSessionTimeout=20000\ninitLimit=10\nsyncLimit=4\ndataDir=" + data
                                + "\nclientPort=" + clientPort + "\n" + peers);
                servers.add(new OldServer(
                        launch(
                                lib,
                                home,
                                List.of("-Dreadonlymode.enabled=true"),
                                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                                config.toString()),
                        clientPort));
            }
            return servers;
        } catch (IOException | RuntimeException e) {
            stopAll(servers);
            throw e;
        }
    }

    private static Path lib(String libProperty) {
        String lib = System.getProperty(libProperty);
        if (lib == null || !Files.isDirectory(Paths.get(lib))) {
            throw new IllegalStateException(libProperty + " names no folder (" + lib + "): run through Maven");
        }
        return Paths.get(lib);
    }

    /** Runs {@code mainClass} with {@code args} on the jars in {@code lib}, its output in {@code home}/server.log. */
    private static Process launch(Path lib, Path home, List<String> properties, String mainClass, String... args)
            throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-Dzookeeper.4lw.commands.whitelist=*");
        command.add("-Dzookeeper.admin.enableServer=false"); // it would need Jetty
        command.addAll(properties);
        command.addAll(List.of("-cp", lib + "/*", mainClass));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(home.resolve("server.log").toFile())
                .start();
        // Not left running past the test JVM, should a test not get to stop it.
        Runtime.getRuntime().addShutdownHook(new Thread(process::destroyForcibly));
        return process;
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
        stopAll(List.of(this));
    }

    /** Stops every server at once, and waits until each has ended. */
    static void stopAll(List<OldServer> servers) throws InterruptedException {
        servers.forEach(server -> server.process.destroy());
        for (OldServer server : servers) {
            if (!server.process.waitFor(10, TimeUnit.SECONDS)) {
                server.process.destroyForcibly().waitFor();
            }
        }
    }
}
