package io.coord.testkit;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.ZooDefs;

/**
 * A TCP proxy on loopback in front of one ZooKeeper server, for the network faults a service must survive: it can
 * delay traffic, cut connections, turn new ones away for a while, lose the server's replies, and refuse a request.
 * Connect a client to {@link #connectString()} instead of the server.
 *
 * <p>Each direction of each connection is a reader thread and a writer thread joined by a bounded queue, so a delay
 * holds every packet for half the round trip without buffering without limit. Both sides are read packet by packet
 * (ZooKeeper frames each one with its length), so that a fault can pick a request or the reply to one.
 */
public final class ZooKeeperProxy implements AutoCloseable {
    private static final int CHUNK_BYTES = 64 * 1024;
    private static final int CHUNKS_IN_FLIGHT = 256;
    // Packets to the client whose header carries a negative xid are not replies: notifications, pings, auth.
    private static final int FIRST_REPLY_XID = 1;
    // A reply's header after its length: xid (4 bytes), zxid (8), then the error code.
    private static final int REPLY_ERROR_OFFSET = 4 + 4 + 8;
    // A request's header after its length: xid (4 bytes), then the operation's code.
    private static final int REQUEST_TYPE_OFFSET = 4 + 4;
    // Packets the client sends with a negative xid, answered out of turn: never refused.
    private static final Set<Integer> NOT_REQUESTS = Set.of(
            ZooDefs.OpCode.ping,
            ZooDefs.OpCode.auth,
            ZooDefs.OpCode.sasl,
            ZooDefs.OpCode.setWatches,
            ZooDefs.OpCode.setWatches2);
    // What a refused request becomes on its way to the server: a read of a path that nobody makes, without a watch.
    private static final byte[] HARMLESS_READ = harmlessRead("/zookeeper-proxy-refused");
    private static final byte[] END = new byte[0];
    private static final byte[] NOTHING = new byte[0];
    private static final Duration LONGEST = Duration.ofDays(1);
    // Far above what a server sends (jute.maxbuffer, 1 MiB unless raised), far below what memory could hold.
    private static final int LONGEST_PACKET = 64 << 20;

    private record Chunk(byte[] bytes, long dueNanos) {}

    // A refusal with no code breaks the connection instead of answering.
    private record Refusal(int opCode, Code code) {}

    private final InetSocketAddress target;
    private final ServerSocket listener;
    // The four threads relaying each open connection, under both its sockets.
    private final Map<Socket, List<Thread>> relays = new ConcurrentHashMap<>();
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private final AtomicLong repliesLost = new AtomicLong();
    private final AtomicLong requestsRefused = new AtomicLong();
    private final AtomicBoolean dropNextReply = new AtomicBoolean();
    private final AtomicReference<Code> failNextReply = new AtomicReference<>();
    // The refusals asked for and not made yet, each for the next request of its kind.
    private final Queue<Refusal> refusals = new ConcurrentLinkedQueue<>();
    private volatile long oneWayNanos;
    private volatile boolean losingReplies;
    private volatile long refusingUntilNanos;
    private volatile boolean refusing;
    private volatile boolean closed;

    private ZooKeeperProxy(InetSocketAddress target, ServerSocket listener) {
        this.target = target;
        this.listener = listener;
        this.refusingUntilNanos = System.nanoTime();
    }

    /** Listens on an ephemeral loopback port and relays to {@code target}. */
    public static ZooKeeperProxy start(InetSocketAddress target) throws IOException {
        ServerSocket listener = new ServerSocket(0, 128, InetAddress.getLoopbackAddress());
        ZooKeeperProxy proxy = new ZooKeeperProxy(target, listener);
        daemon("zk-proxy-accept-" + listener.getLocalPort(), proxy::acceptLoop).start();
        return proxy;
    }

    /** Where clients connect, as {@code host:port}. */
    public String connectString() {
        return listener.getInetAddress().getHostAddress() + ":" + listener.getLocalPort();
    }

    /** The server behind the proxy. */
    public InetSocketAddress target() {
        return target;
    }

    /**
     * Adds {@code rtt} to every round trip from now on, half on the way to the server and half on the way back, as a
     * network would; {@link Duration#ZERO} takes the delay away.
     */
    public ZooKeeperProxy delay(Duration rtt) {
        oneWayNanos = bounded("rtt", rtt).toNanos() / 2;
        return this;
    }

    /** Closes every open connection, as a network failure would. The client reconnects at once if it can. */
    public void cutConnections() {
        // One by one: a socket the accept loop adds meanwhile is closed on the loop's next look, not forgotten.
        for (Socket socket : sockets) {
            closeQuietly(socket);
            sockets.remove(socket);
        }
    }

    /** While on, new connections are closed as soon as they are accepted. */
    public void refuseConnections(boolean on) {
        refusing = on;
    }

    /**
     * Cuts the client off for {@code period}: open connections are closed, and new ones are turned away until the
     * period ends. Its session expires if the period is longer than the session timeout. It survives a period short
     * enough for the client to reconnect before the timeout ends; the server counts that from the last packet it
     * heard, up to a third of the timeout before the cut, and a client of one server tries again every 1 to 2 s. So
     * keep the period under about two thirds of the timeout less 2 s for a session that must survive.
     */
    public void cutOff(Duration period) {
        refusingUntilNanos = System.nanoTime() + bounded("period", period).toNanos();
        cutConnections();
    }

    /**
     * Ends every fault set so far (refusals, a cut-off, lost replies, a reply set to be dropped or failed, the delay)
     * without closing the connections open now: the clients that are about to close through them must reach their
     * server.
     */
    void endFaults() {
        refusing = false;
        refusingUntilNanos = System.nanoTime();
        losingReplies = false;
        dropNextReply.set(false);
        failNextReply.set(null);
        refusals.clear();
        oneWayNanos = 0;
    }

    /** A test's delay or cut: not negative, and at most a day, which no test waits out. */
    private static Duration bounded(String what, Duration value) {
        Objects.requireNonNull(value, what);
        if (value.isNegative() || value.compareTo(LONGEST) > 0) {
            throw new IllegalArgumentException(what + " must be between 0 and " + LONGEST + ", was " + value);
        }
        return value;
    }

    /** While on, whatever the server sends is dropped; the client's requests still get through. */
    public void loseReplies(boolean on) {
        losingReplies = on;
    }

    /**
     * Loses the server's reply to the next request, then cuts the connection: the request took effect, but the client
     * cannot know, and a client that retries sends it again (a retried create meets the node it created itself).
     */
    public void dropNextReply() {
        dropNextReply.set(true);
    }

    /**
     * The server's reply to the next request reaches the client as {@code code} instead, as a refusal by the server
     * would (a request throttled, say); the server did what it was asked all the same.
     */
    public void failNextReply(Code code) {
        failNextReply.set(Objects.requireNonNull(code, "code"));
    }

    /**
     * The next request of the kind {@code opCode} (one of {@link org.apache.zookeeper.ZooDefs.OpCode}, say
     * {@code OpCode.delete}) is refused with {@code code}, as a server with request throttling on refuses one when it
     * is busy (THROTTLEDOP): the server never does what it asked, and its answer comes in its turn among the others.
     * Refusals asked for one after another are made one after another, each on the next request of its kind.
     */
    public void refuseNext(int opCode, Code code) {
        Objects.requireNonNull(code, "code");
        if (code == Code.OK) {
            throw new IllegalArgumentException("code must be an error: a refusal carries no answer's body");
        }
        refusals.add(new Refusal(checkedRequest(opCode), code));
    }

    /**
     * The next request of the kind {@code opCode} never reaches the server: its connection breaks instead, as a server
     * before 3.6 breaks it after answering a request it does not know (addWatch, say) ahead of those still in its
     * pipeline. It is counted among {@link #requestsRefused()}, and queued with the refusals, in their order.
     */
    public void breakOnNext(int opCode) {
        refusals.add(new Refusal(checkedRequest(opCode), null));
    }

    private static int checkedRequest(int opCode) {
        if (opCode <= 0 || NOT_REQUESTS.contains(opCode)) {
            throw new IllegalArgumentException("opCode must be the code of a request that is answered in its turn (not"
                    + " a ping, an auth or a setWatches), was " + opCode);
        }
        return opCode;
    }

    /** Whether it still relays: not closed. */
    boolean isOpen() {
        return !closed;
    }

    /** How many requests were refused so far (see {@link #refuseNext} and {@link #breakOnNext}). */
    public long requestsRefused() {
        return requestsRefused.get();
    }

    /** How many of the server's packets were lost so far. */
    public long repliesLost() {
        return repliesLost.get();
    }

    @Override
    public void close() {
        closed = true;
        closeQuietly(listener);
        cutConnections();
    }

    private boolean turnsAway() {
        return refusing || System.nanoTime() - refusingUntilNanos < 0;
    }

    private void acceptLoop() {
        while (!closed) {
            Socket client;
            try {
                client = listener.accept();
            } catch (IOException e) {
                return; // the listener was closed
            }
            if (turnsAway()) {
                closeQuietly(client);
                continue;
            }
            Socket server = new Socket();
            try {
                // No Nagle on either leg: it would add its own delay to ZooKeeper's small packets.
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
                cutConnections();
                return;
            }
            if (turnsAway()) {
                // Told to refuse while this one was being set up, perhaps after a cut went by without it.
                end(client, server);
                continue;
            }
            BlockingQueue<Chunk> up = new ArrayBlockingQueue<>(CHUNKS_IN_FLIGHT);
            BlockingQueue<Chunk> down = new ArrayBlockingQueue<>(CHUNKS_IN_FLIGHT);
            String name = "zk-proxy-" + client.getPort();
            try {
                // The xids of the requests refused on this connection, whose answers are rewritten on their way back.
                Map<Integer, Code> refused = new ConcurrentHashMap<>();
                Source requests = requests(client, refused);
                Source replies = replies(server, client, refused);
                List<Thread> relay = List.of(
                        daemon(name + "-up-read", () -> read(client, server, up, requests)),
                        daemon(name + "-up-write", () -> write(client, server, up)),
                        daemon(name + "-down-read", () -> read(server, client, down, replies)),
                        daemon(name + "-down-write", () -> write(server, client, down)));
                relays.put(client, relay);
                relays.put(server, relay);
                relay.forEach(Thread::start);
            } catch (IOException e) {
                end(client, server); // closed before the relay started
            }
        }
    }

    /** One read of a direction: the bytes to pass on (empty: nothing this time), or null once it has ended. */
    @FunctionalInterface
    private interface Source {
        byte[] next() throws IOException;
    }

    /**
     * The client's side, packet by packet (ZooKeeper frames each request with its length, the handshake too), so that
     * a refusal can pick its request. A refused request reaches the server as a harmless read under the same xid, so
     * that its answer comes in its turn among the others, and {@link #replies} gives that answer the refusal's code.
     */
    private Source requests(Socket from, Map<Integer, Code> refused) throws IOException {
        DataInputStream in = new DataInputStream(new BufferedInputStream(from.getInputStream(), CHUNK_BYTES));
        boolean[] handshake = {true}; // the first packet asks for a session and has no header
        return () -> {
            byte[] packet = packet(in);
            if (packet == null) {
                return null;
            }
            boolean request = !handshake[0] && packet.length >= 4 + REQUEST_TYPE_OFFSET;
            handshake[0] = false;
            if (!request) {
                return packet;
            }
            ByteBuffer header = ByteBuffer.wrap(packet);
            int xid = header.getInt(4);
            int opCode = header.getInt(REQUEST_TYPE_OFFSET);
            Refusal refusal = xid < FIRST_REPLY_XID
                    ? null
                    : refusals.stream()
                            .filter(r -> r.opCode() == opCode && refusals.remove(r))
                            .findFirst()
                            .orElse(null);
            if (refusal == null) {
                return packet;
            }
            requestsRefused.incrementAndGet();
            if (refusal.code() == null) {
                return null; // ends this connection
            }
            refused.put(xid, refusal.code());
            byte[] harmless = HARMLESS_READ.clone();
            ByteBuffer.wrap(harmless).putInt(4, xid);
            return harmless;
        };
    }

    /** One length-framed packet, its length first; null at the end of the stream. */
    private static byte[] packet(DataInputStream in) throws IOException {
        int length;
        try {
            length = in.readInt();
        } catch (EOFException e) {
            return null;
        }
        if (length < 0 || length > LONGEST_PACKET) {
            // Not a ZooKeeper packet (a four-letter word has no length): pass nothing, end the relay.
            throw new IOException("not a ZooKeeper packet: length " + length);
        }
        byte[] packet = new byte[4 + length];
        ByteBuffer.wrap(packet).putInt(length);
        in.readFully(packet, 4, length);
        return packet;
    }

    /** An exists request, xid to be filled in, for {@code path} and without a watch: length, header, body. */
    private static byte[] harmlessRead(String path) {
        byte[] name = path.getBytes(StandardCharsets.UTF_8);
        int length = 4 + 4 + 4 + name.length + 1;
        return ByteBuffer.allocate(4 + length)
                .putInt(length)
                .putInt(0)
                .putInt(ZooDefs.OpCode.exists)
                .putInt(name.length)
                .put(name)
                .put((byte) 0)
                .array();
    }

    /** The server's side, packet by packet, so that a fault can pick the reply to a request. */
    private Source replies(Socket from, Socket to, Map<Integer, Code> refused) throws IOException {
        DataInputStream in = new DataInputStream(new BufferedInputStream(from.getInputStream(), CHUNK_BYTES));
        boolean[] handshake = {true}; // the first packet answers the handshake and has no header
        return () -> {
            // At the end of the stream the server closed the connection after its last packet (a session it found
            // expired, say): what it sent before still goes to the client, after the same delay, and then the end.
            byte[] packet = packet(in);
            if (packet == null) {
                return null;
            }
            int xid = packet.length >= 8 ? ByteBuffer.wrap(packet).getInt(4) : 0;
            boolean reply = !handshake[0] && xid >= FIRST_REPLY_XID;
            handshake[0] = false;
            if (losingReplies) {
                repliesLost.incrementAndGet();
                return NOTHING;
            }
            Code failed = reply ? refused.remove(xid) : null;
            if (failed == null && reply) {
                failed = failNextReply.getAndSet(null);
            }
            if (failed != null) {
                ByteBuffer.wrap(packet).putInt(REPLY_ERROR_OFFSET, failed.intValue()); // the body is then not read
            }
            if (reply && dropNextReply.compareAndSet(true, false)) {
                repliesLost.incrementAndGet();
                end(from, to);
                return null;
            }
            return packet;
        };
    }

    private void read(Socket from, Socket to, BlockingQueue<Chunk> queue, Source source) {
        try {
            for (byte[] bytes = source.next(); bytes != null; bytes = source.next()) {
                if (bytes.length > 0) {
                    queue.put(new Chunk(bytes, System.nanoTime() + oneWayNanos));
                }
            }
        } catch (IOException e) {
            end(from, to);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            end(from, to);
        } finally {
            // Behind what is queued, so that the writer passes it all on first; waits for room if need be. A relay
            // that ended otherwise has interrupted this thread, and its writer is gone: nothing is waited for then.
            try {
                queue.put(new Chunk(END, System.nanoTime() + oneWayNanos));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void write(Socket from, Socket to, BlockingQueue<Chunk> queue) {
        try {
            OutputStream out = to.getOutputStream();
            while (true) {
                Chunk chunk = queue.take();
                // The delay is what this proxy is for, so a timed park is the event being waited for.
                long wait;
                while ((wait = chunk.dueNanos() - System.nanoTime()) > 0) {
                    LockSupport.parkNanos(wait);
                    if (Thread.interrupted()) {
                        throw new InterruptedException(); // the connection ended meanwhile
                    }
                }
                if (chunk.bytes() == END) {
                    // ZooKeeper never half-closes a connection: an end in one direction, passed on after the same
                    // delay as the data before it, ends both.
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

    /**
     * Ends a connection: both sockets, and the threads that relay it, which may be parked on a full queue or on a
     * delay, where a closed socket would not reach them.
     */
    private void end(Socket a, Socket b) {
        closeQuietly(a);
        closeQuietly(b);
        sockets.remove(a);
        sockets.remove(b);
        List<Thread> relay = relays.remove(a);
        relays.remove(b);
        if (relay != null) {
            relay.forEach(Thread::interrupt);
        }
    }

    private static Thread daemon(String name, Runnable body) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        return t;
    }

    private static void closeQuietly(AutoCloseable closeable) {
        try {
            closeable.close();
        } catch (Exception e) {
            // Already closed or broken: either way it is gone.
        }
    }

    @Override
    public String toString() {
        return "proxy " + connectString() + " -> " + target.getHostString() + ":" + target.getPort();
    }
}
