package io.coord.core.internal;

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
 */
public final class MultiRead {
    private MultiRead() {}

    /**
     * The data of {@code paths} (named as the client names them, without its namespace), in their order. Fails with
     * the client's closed error if the client closes first, or with the server's error for the batch as a whole.
     */
    public static CompletableFuture<List<OpResult>> read(ClientContext context, List<String> paths) {
        CompletableFuture<List<OpResult>> answer = context.track(new CompletableFuture<>());
        send(context, paths, answer);
        return answer;
    }

    private static void send(ClientContext context, List<String> paths, CompletableFuture<List<OpResult>> answer) {
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
                                answered(context, paths, answer, Code.get(rc), results);
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
            Code code,
            List<OpResult> results) {
        if (results != null) {
            answer.complete(results); // the code is then the first read's error, if any
        } else if (code == Code.UNIMPLEMENTED) {
            context.olderServer();
            readEach(context, paths, answer);
        } else if (ResultCodes.isInDoubt(code) && !context.isClosed()) {
            context.whenConnected(() -> send(context, paths, answer));
        } else {
            answer.completeExceptionally(KeeperException.create(code, paths.get(0)));
        }
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
                                    context.whenConnected(() -> send(context, paths, answer));
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
