package io.coord.queue;

import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.api.CuratorEventType;
import org.apache.curator.framework.state.ConnectionState;

/**
 * What the queues of one {@link CuratorFramework} share: one {@link SharedQueue} per path, so that every consumer of
 * a path in this client shares one watch and one children read; one connection listener; and the requests still in
 * flight, which fail at once if the client is closed rather than leave their callers waiting.
 */
final class ClientQueues {
    private static final ReentrantLock REGISTRY_LOCK = new ReentrantLock();
    // Weak both ways: the client keeps its ClientQueues alive through the listeners it holds, and nothing else does.
    private static final Map<CuratorFramework, WeakReference<ClientQueues>> REGISTRY = new WeakHashMap<>();

    private final CuratorFramework client;
    private final Map<String, SharedQueue> queues = new ConcurrentHashMap<>();
    private final Set<CompletableFuture<?>> pending = ConcurrentHashMap.newKeySet();
    private final ReentrantLock stateLock = new ReentrantLock();
    // Guarded by stateLock.
    private long lastSession;
    private List<Runnable> onReconnect = new ArrayList<>();
    private volatile boolean closed;

    private ClientQueues(CuratorFramework client) {
        this.client = client;
    }

    static ClientQueues of(CuratorFramework client) {
        REGISTRY_LOCK.lock();
        try {
            WeakReference<ClientQueues> ref = REGISTRY.get(client);
            ClientQueues queues = ref == null ? null : ref.get();
            if (queues == null) {
                queues = new ClientQueues(client);
                client.getConnectionStateListenable().addListener(queues::stateChanged);
                client.getCuratorListenable().addListener(queues::curatorEvent);
                REGISTRY.put(client, new WeakReference<>(queues));
            }
            return queues;
        } finally {
            REGISTRY_LOCK.unlock();
        }
    }

    CuratorFramework client() {
        return client;
    }

    SharedQueue queue(String path) {
        return queues.computeIfAbsent(path, p -> new SharedQueue(this, p));
    }

    /** Registers a request's answer, so that closing the client fails it instead of leaving it pending for ever. */
    <T> CompletableFuture<T> track(CompletableFuture<T> answer) {
        pending.add(answer);
        answer.whenComplete((value, error) -> pending.remove(answer));
        if (closed) {
            answer.completeExceptionally(new ClientClosedException("the queue"));
        }
        return answer;
    }

    /** The current ZooKeeper session id, or 0 when there is no handle (not started, or closed). */
    long sessionId() {
        try {
            return client.getZookeeperClient().getZooKeeper().getSessionId();
        } catch (Exception e) {
            return 0;
        }
    }

    boolean isClosed() {
        return closed;
    }

    /** Blocks until connected, ignoring interrupts (the flag is restored); for writes that must be seen through. */
    void awaitConnectedFully(String path) {
        boolean interrupted = false;
        try {
            while (true) {
                if (closed) {
                    throw new ClientClosedException(path);
                }
                try {
                    if (client.blockUntilConnected(1, TimeUnit.SECONDS)) {
                        return;
                    }
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Waits for the connection until the deadline; false if it passed first. */
    boolean awaitConnected(Deadline deadline, String path) throws InterruptedException {
        while (!closed) {
            long slice = Math.min(TimeUnit.SECONDS.toNanos(1), deadline.remainingNanos());
            if (client.blockUntilConnected(
                    (int) Math.max(1, TimeUnit.NANOSECONDS.toMillis(slice)), TimeUnit.MILLISECONDS)) {
                return true;
            }
            if (deadline.expired()) {
                return false;
            }
        }
        throw new ClientClosedException(path);
    }

    /** Runs {@code task} after the next reconnection; tasks never block, they only send requests. */
    void whenReconnected(Runnable task) {
        stateLock.lock();
        try {
            if (!closed) {
                onReconnect.add(task);
            }
        } finally {
            stateLock.unlock();
        }
        if (client.getZookeeperClient().isConnected()) {
            // The reconnection may have happened before the task was added: run the tasks now rather than never.
            runReconnectTasks();
        }
    }

    private void stateChanged(CuratorFramework c, ConnectionState state) {
        boolean newSession;
        stateLock.lock();
        try {
            if (state == ConnectionState.LOST) {
                newSession = true; // the session is over, and with it our watches and ephemeral znodes
            } else if (state.isConnected()) {
                long session = sessionId();
                newSession = session != lastSession;
                lastSession = session;
            } else {
                return; // SUSPENDED: watches and znodes live on unless the session ends, which LOST reports
            }
        } finally {
            stateLock.unlock();
        }
        queues.values().forEach(q -> q.connectionChanged(newSession));
        if (state.isConnected()) {
            runReconnectTasks();
        }
    }

    private void runReconnectTasks() {
        List<Runnable> tasks;
        stateLock.lock();
        try {
            tasks = onReconnect;
            onReconnect = new ArrayList<>();
        } finally {
            stateLock.unlock();
        }
        tasks.forEach(Runnable::run);
    }

    private void curatorEvent(CuratorFramework c, CuratorEvent event) {
        if (event.getType() != CuratorEventType.CLOSING) {
            return;
        }
        closed = true;
        stateLock.lock();
        try {
            onReconnect = new ArrayList<>();
        } finally {
            stateLock.unlock();
        }
        List.copyOf(pending).forEach(f -> f.completeExceptionally(new ClientClosedException("the queue")));
        // Wake every waiter: its next request fails with the closed client's error.
        queues.values().forEach(q -> q.connectionChanged(true));
    }
}
