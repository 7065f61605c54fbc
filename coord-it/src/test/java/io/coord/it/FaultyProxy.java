package io.coord.it;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A TCP proxy in front of one ZooKeeper server that can lose the server's replies, cut every connection, and turn
 * new connections away: the network faults that make a client retry a request the server already applied.
 */
final class FaultyProxy implements AutoCloseable {
    private final ServerSocket listener;
    private final InetSocketAddress target;
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private final ExecutorService threads = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "faulty-proxy");
        t.setDaemon(true);
        return t;
    });
    private final AtomicLong repliesLost = new AtomicLong();
    private volatile boolean losingReplies;
    private volatile boolean refusing;

    private FaultyProxy(ServerSocket listener, InetSocketAddress target) {
        this.listener = listener;
        this.target = target;
    }

    static FaultyProxy start(String host, int port) throws IOException {
        ServerSocket listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        FaultyProxy proxy = new FaultyProxy(listener, new InetSocketAddress(host, port));
        proxy.threads.execute(proxy::acceptLoop);
        return proxy;
    }

    String connectString() {
        return listener.getInetAddress().getHostAddress() + ":" + listener.getLocalPort();
    }

    /** While on, whatever the server sends is dropped; the client's requests still get through. */
    void loseReplies(boolean on) {
        losingReplies = on;
    }

    /** How many chunks of server replies were dropped so far. */
    long repliesLost() {
        return repliesLost.get();
    }

    /** While on, new connections are closed as soon as they are accepted. */
    void refuseConnections(boolean on) {
        refusing = on;
    }

    /** Closes every open connection, as a network failure would. */
    void cutAll() {
        sockets.forEach(FaultyProxy::closeQuietly);
        sockets.clear();
    }

    @Override
    public void close() {
        closeQuietly(listener);
        cutAll();
        threads.shutdownNow();
    }

    private void acceptLoop() {
        while (!listener.isClosed()) {
            try {
                Socket client = listener.accept();
                if (refusing) {
                    closeQuietly(client);
                    continue;
                }
                Socket server = new Socket(target.getAddress(), target.getPort());
                sockets.add(client);
                sockets.add(server);
                threads.execute(() -> pump(client, server, false));
                threads.execute(() -> pump(server, client, true));
            } catch (IOException e) {
                // The listener was closed, or the server is down: the client sees a failed connection and retries.
            }
        }
    }

    private void pump(Socket from, Socket to, boolean replies) {
        byte[] buffer = new byte[8192];
        try (InputStream in = from.getInputStream();
                OutputStream out = to.getOutputStream()) {
            for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                if (replies && losingReplies) {
                    repliesLost.incrementAndGet();
                } else {
                    out.write(buffer, 0, n);
                    out.flush();
                }
            }
        } catch (IOException e) {
            // One side closed: close the other below.
        } finally {
            closeQuietly(from);
            closeQuietly(to);
        }
    }

    private static void closeQuietly(AutoCloseable closeable) {
        try {
            closeable.close();
        } catch (Exception e) {
            // Already closed.
        }
    }
}
