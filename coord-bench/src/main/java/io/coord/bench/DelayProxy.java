package io.coord.bench;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;

/**
 * A TCP relay on loopback in front of one ZooKeeper server that holds every chunk for half the round trip in each
 * direction, so a request and its reply together cost one extra {@code rtt}, as across a network.
 *
 * <p>Each direction of each connection is a reader thread and a writer thread joined by a bounded queue: a reader
 * that gets too far ahead blocks, which pushes back on the sender instead of buffering without limit. When either end
 * closes, the connection's four threads end on their own; {@link #close()} ends everything.
 */
final class DelayProxy implements AutoCloseable {
    private static final int CHUNK_BYTES = 64 * 1024;
    private static final int CHUNKS_IN_FLIGHT = 256;
    private static final byte[] END = new byte[0];

    private record Chunk(byte[] bytes, long dueNanos) {}

    private final InetSocketAddress target;
    private final long oneWayNanos;
    private final ServerSocket listener;
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    private DelayProxy(InetSocketAddress target, Duration rtt, ServerSocket listener) {
        this.target = target;
        this.oneWayNanos = rtt.toNanos() / 2;
        this.listener = listener;
    }

    /** Listens on an ephemeral loopback port and relays to {@code target}, adding {@code rtt} per round trip. */
    static DelayProxy start(InetSocketAddress target, Duration rtt) throws IOException {
        ServerSocket listener = new ServerSocket(0, 128, InetAddress.getLoopbackAddress());
        DelayProxy proxy = new DelayProxy(target, rtt, listener);
        daemon("delay-proxy-accept-" + listener.getLocalPort(), proxy::acceptLoop)
                .start();
        return proxy;
    }

    /** Where clients connect, as {@code host:port}. */
    String address() {
        return listener.getInetAddress().getHostAddress() + ":" + listener.getLocalPort();
    }

    InetSocketAddress target() {
        return target;
    }

    @Override
    public void close() {
        closed = true;
        closeQuietly(listener);
        sockets.forEach(DelayProxy::closeQuietly);
        sockets.clear();
    }

    private void acceptLoop() {
        while (!closed) {
            Socket client;
            try {
                client = listener.accept();
            } catch (IOException e) {
                return; // the listener was closed
            }
            Socket server = new Socket();
            try {
                // No Nagle on either leg: it would add its own delay to the small ZooKeeper packets.
                client.setTcpNoDelay(true);
                server.setTcpNoDelay(true);
                server.connect(target, 5_000);
            } catch (IOException e) {
                // The server is down: refuse the client the way the server itself would.
                closeQuietly(client);
                closeQuietly(server);
                continue;
            }
            sockets.add(client);
            sockets.add(server);
            if (closed) {
                close();
                return;
            }
            relay(client, server, "up");
            relay(server, client, "down");
        }
    }

    private void relay(Socket from, Socket to, String direction) {
        BlockingQueue<Chunk> queue = new ArrayBlockingQueue<>(CHUNKS_IN_FLIGHT);
        String name = "delay-proxy-" + from.getPort() + "-" + direction;
        daemon(name + "-read", () -> read(from, to, queue)).start();
        daemon(name + "-write", () -> write(from, to, queue)).start();
    }

    private void read(Socket from, Socket to, BlockingQueue<Chunk> queue) {
        byte[] buffer = new byte[CHUNK_BYTES];
        try {
            InputStream in = from.getInputStream();
            int n;
            while ((n = in.read(buffer)) >= 0) {
                queue.put(new Chunk(Arrays.copyOf(buffer, n), System.nanoTime() + oneWayNanos));
            }
        } catch (IOException e) {
            end(from, to);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            end(from, to);
        } finally {
            // Wakes a writer parked on an empty queue; a full queue means the writer is busy and finds out itself.
            queue.offer(new Chunk(END, System.nanoTime() + oneWayNanos));
        }
    }

    private void write(Socket from, Socket to, BlockingQueue<Chunk> queue) {
        try {
            OutputStream out = to.getOutputStream();
            while (true) {
                Chunk chunk = queue.take();
                // The delay is the point of this class, so here a timed park is the event being waited for.
                long wait;
                while ((wait = chunk.dueNanos() - System.nanoTime()) > 0) {
                    LockSupport.parkNanos(wait);
                }
                if (chunk.bytes() == END) {
                    // ZooKeeper never half-closes a connection, so an end in one direction, passed on after the
                    // same delay as the data before it, ends both.
                    end(from, to);
                    return;
                }
                out.write(chunk.bytes());
                out.flush();
            }
        } catch (IOException e) {
            end(from, to);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            end(from, to);
        }
    }

    private void end(Socket a, Socket b) {
        closeQuietly(a);
        closeQuietly(b);
        sockets.remove(a);
        sockets.remove(b);
    }

    private static Thread daemon(String name, Runnable body) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        return t;
    }

    private static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception e) {
            // Already closed or broken: either way it is gone, which is all we wanted.
        }
    }
}
