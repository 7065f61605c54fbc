package io.coord.core.internal;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.drivers.OperationTrace;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;

/**
 * Reads the data of many znodes in one request: ZooKeeper's read-only multi (3.6+). Curator 5.9 does not wrap it, so
 * it goes through the client's ZooKeeper handle, with the namespace applied here, and is reported to Curator's tracer
 * like Curator's own requests. Each read succeeds or fails on its own: a missing znode is an error result in its
 * place. A read lost with the connection is sent again once connected, since reads are safe to repeat.
 *
 * <p>A server before 3.6 answers UNIMPLEMENTED (and drops the connection): from then on the client reads such
 * batches node by node, with the same results, one request per node.
 *
 * <p>A reply must fit the client's {@code jute.maxbuffer}: the client takes a bigger one for a broken connection,
 * reconnects, and the read, sent again, breaks it again for ever. Callers that cannot bound what one batch returns
 * read with {@link #read(ClientContext, List, int)}, which splits by the most each node can hold.
 */
public final class MultiRead {
    private static final int DEFAULT_MAX_BUFFER = 0xfffff;
    // A reply's header, vector length and framing, with room to spare.
    private static final int REPLY_OVERHEAD = 1024;
    // One getData result in a multi-read reply besides its data: the result header, length prefix and Stat.
    private static final int READ_RESULT_OVERHEAD = 128;

    private MultiRead() {}

    /** {@code jute.maxbuffer} as this JVM's clients read it: the largest request or reply ZooKeeper takes. */
    public static int maxBuffer() {
        return Integer.getInteger("jute.maxbuffer", DEFAULT_MAX_BUFFER);
    }

    /** How many reads one reply can carry when no node holds more than {@code maxDataBytes}. */
    public static int readsPerReply(int maxDataBytes) {
        return Math.max(1, (maxBuffer() - REPLY_OVERHEAD) / (maxDataBytes + READ_RESULT_OVERHEAD));
    }

    /**
     * The data of {@code paths}, as {@link #read(ClientContext, List)} gives it, in as many requests as it takes for
     * each reply to fit when no node holds more than {@code maxDataBytes}. The requests go out together.
     */
    public static CompletableFuture<List<OpResult>> read(ClientContext context, List<String> paths, int maxDataBytes) {
        int perReply = readsPerReply(maxDataBytes);
        if (paths.size() <= perReply) {
            return read(context, paths);
        }
        List<CompletableFuture<List<OpResult>>> parts = new ArrayList<>();
        for (int from = 0; from < paths.size(); from += perReply) {
            parts.add(read(context, paths.subList(from, Math.min(paths.size(), from + perReply))));
        }
        return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).thenApply(done -> {
            List<OpResult> all = new ArrayList<>(paths.size());
            parts.forEach(part -> all.addAll(part.join()));
            return all;
        });
    }

    /**
     * The data of {@code paths} (named as the client names them, without its namespace), in their order. Fails with
     * the client's closed error if the client closes first, or with the server's error for the batch as a whole.
     */
    public static CompletableFuture<List<OpResult>> read(ClientContext context, List<String> paths) {
        CompletableFuture<List<OpResult>> answer = context.track(new CompletableFuture<>());
        send(context, paths, answer, 0);
        return answer;
    }

    private static void send(
            ClientContext context, List<String> paths, CompletableFuture<List<OpResult>> answer, int lost) {
        if (answer.isDone()) {
            return; // the client was closed
        }
        if (context.hasOlderServer()) {
            readEach(context, paths, answer);
            return;
        }
        CuratorFramework client = context.client();
        String namespace = client.getNamespace();
        List<Op> reads = paths.stream()
                .map(path -> Op.getData(ZKPaths.fixForNamespace(namespace, path)))
                .toList();
        OperationTrace trace = client.getZookeeperClient().startAdvancedTracer("MultiReadImpl-Background");
        try {
            client.getZookeeperClient()
                    .getZooKeeper()
                    .multi(
                            reads,
                            (rc, path, ctx, results) -> {
                                trace.setReturnCode(rc).commit();
                                answered(context, paths, answer, lost, Code.get(rc), results);
                            },
                            null);
        } catch (Exception e) {
            answer.completeExceptionally(e); // the client is closed, or not started
        }
    }

    private static void answered(
            ClientContext context,
            List<String> paths,
            CompletableFuture<List<OpResult>> answer,
            int lost,
            Code code,
            List<OpResult> results) {
        if (results != null) {
            answer.complete(results); // the code is then the first read's error, if any
        } else if (code == Code.UNIMPLEMENTED) {
            context.olderServer();
            readEach(context, paths, answer);
        } else if (ResultCodes.isInDoubt(code) && !context.isClosed()) {
            // Lost twice running: perhaps the reply is too big (nodes written by others may hold up to a reply's
            // worth each), which breaks the connection each time. Halves are read instead, down to single nodes.
            context.whenConnected(() -> {
                if (lost == 0 || paths.size() == 1) {
                    send(context, paths, answer, lost + 1);
                } else {
                    readHalves(context, paths, answer);
                }
            });
        } else {
            answer.completeExceptionally(KeeperException.create(code, paths.get(0)));
        }
    }

    private static void readHalves(
            ClientContext context, List<String> paths, CompletableFuture<List<OpResult>> answer) {
        int half = paths.size() / 2;
        CompletableFuture<List<OpResult>> first = read(context, paths.subList(0, half));
        CompletableFuture<List<OpResult>> second = read(context, paths.subList(half, paths.size()));
        first.thenCombine(second, (a, b) -> {
                    List<OpResult> all = new ArrayList<>(a);
                    all.addAll(b);
                    return all;
                })
                .whenComplete((all, error) -> {
                    if (error != null) {
                        answer.completeExceptionally(ResultCodes.unwrap(error));
                    } else {
                        answer.complete(all);
                    }
                });
    }

    /** One background read per node (Curator retries each across connection loss), gathered as a multi answers. */
    private static void readEach(ClientContext context, List<String> paths, CompletableFuture<List<OpResult>> answer) {
        OpResult[] results = new OpResult[paths.size()];
        AtomicInteger left = new AtomicInteger(paths.size());
        AtomicBoolean resent = new AtomicBoolean();
        for (int i = 0; i < paths.size(); i++) {
            int index = i;
            try {
                context.client()
                        .getData()
                        .inBackground((c, event) -> {
                            Code code = Code.get(event.getResultCode());
                            if (ResultCodes.isInDoubt(code)) {
                                // Curator's retries ran out: read the whole batch again once connected, once.
                                if (!context.isClosed() && resent.compareAndSet(false, true)) {
                                    context.whenConnected(() -> send(context, paths, answer, 0));
                                }
                                return;
                            }
                            results[index] = code == Code.OK
                                    ? new OpResult.GetDataResult(event.getData(), event.getStat())
                                    : new OpResult.ErrorResult(code.intValue());
                            if (left.decrementAndGet() == 0 && !resent.get()) {
                                answer.complete(Arrays.asList(results));
                            }
                        })
                        .forPath(paths.get(index));
            } catch (Exception e) {
                answer.completeExceptionally(e); // the client is closed, or not started
                return;
            }
        }
    }
}
