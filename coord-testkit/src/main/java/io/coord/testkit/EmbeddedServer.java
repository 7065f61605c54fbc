package io.coord.testkit;

import java.net.InetSocketAddress;
import org.apache.curator.test.InstanceSpec;

/** One server of a {@link ZooKeeperEnsemble}, which a test can kill and restart. */
public final class EmbeddedServer {
    private final ZooKeeperEnsemble ensemble;
    private final InstanceSpec spec;
    private volatile boolean running = true;

    EmbeddedServer(ZooKeeperEnsemble ensemble, InstanceSpec spec) {
        this.ensemble = ensemble;
        this.spec = spec;
    }

    /** The server's id in the ensemble, from 1. */
    public int id() {
        return spec.getServerId();
    }

    public String host() {
        return spec.getHostname();
    }

    /** The port clients connect to. */
    public int port() {
        return spec.getPort();
    }

    /** {@code host:port}, for a connect string. */
    public String address() {
        return host() + ":" + port();
    }

    public InetSocketAddress socketAddress() {
        return new InetSocketAddress(host(), port());
    }

    public boolean isRunning() {
        return running;
    }

    /**
     * Stops the server abruptly, keeping its data. Its clients lose their connection at once and move to another
     * server if they can reach one; a session that reaches none expires when its timeout runs out.
     *
     * @throws IllegalStateException if the server is not running
     */
    public void kill() {
        if (!running) {
            throw new IllegalStateException("server " + id() + " (" + address() + ") is not running");
        }
        ensemble.kill(spec);
        running = false;
    }

    /**
     * Starts a killed server again with its data, and waits until it serves clients (in a quorum, once it has
     * rejoined). A member of a quorum can serve only while a majority runs: while fewer run, it returns without
     * waiting, and the restart that makes the majority waits for them all.
     *
     * @throws IllegalStateException if the server is running
     */
    public void restart() {
        if (running) {
            throw new IllegalStateException("server " + id() + " (" + address() + ") is already running");
        }
        // Running once started, even if it then fails to serve in time: a later restart would start it twice.
        ensemble.restart(spec, () -> running = true);
    }

    InstanceSpec spec() {
        return spec;
    }

    @Override
    public String toString() {
        return "server " + id() + " (" + address() + (running ? ")" : ", killed)");
    }
}
