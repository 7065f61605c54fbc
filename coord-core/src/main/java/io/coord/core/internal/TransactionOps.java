package io.coord.core.internal;

import io.coord.core.CoordinationException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.jute.BinaryOutputArchive;
import org.apache.zookeeper.CreateMode;

/** Builds the operations of a multi-op transaction. Building one does no I/O; Curator declares {@code Exception} only for bad paths. */
public final class TransactionOps {
    /** Each operation's header in a transaction's request: its type, a done flag and an error code. */
    public static final int OP_HEADER_BYTES = 4 + 1 + 4;

    private TransactionOps() {}

    /** What {@code op} adds to a transaction's request: its header and its serialized form, ACL included. */
    public static int requestBytes(CuratorOp op) {
        ByteArrayOutputStream sent = new ByteArrayOutputStream();
        try {
            op.get().toRequestRecord().serialize(BinaryOutputArchive.getArchive(sent), "request");
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "measuring an operation on " + op.get().getPath(), e);
        }
        return OP_HEADER_BYTES + sent.size();
    }

    @FunctionalInterface
    private interface Builder {
        CuratorOp build() throws Exception;
    }

    public static CuratorOp create(CuratorFramework client, String path, CreateMode mode, byte[] data) {
        return op(path, () -> client.transactionOp().create().withMode(mode).forPath(path, data));
    }

    public static CuratorOp check(CuratorFramework client, String path) {
        return op(path, () -> client.transactionOp().check().forPath(path));
    }

    public static CuratorOp delete(CuratorFramework client, String path) {
        return op(path, () -> client.transactionOp().delete().forPath(path));
    }

    public static CuratorOp setData(CuratorFramework client, String path, int version, byte[] data) {
        return op(
                path,
                () -> client.transactionOp().setData().withVersion(version).forPath(path, data));
    }

    private static CuratorOp op(String path, Builder builder) {
        try {
            return builder.build();
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new CoordinationException("could not build a transaction operation on " + path, e);
        }
    }
}
