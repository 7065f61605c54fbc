package io.coord.core.internal;

import io.coord.core.SequenceNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.framework.CuratorFramework;

/**
 * Follows a path's queue through the client's view, for those who watch an election without taking part in it: one
 * watch per client and path, shared with every lock, latch and observer of the client there, and no request per
 * change. Closing releases this follower's use of the view, whose watch is removed once nothing of the client uses the
 * path any more (see {@link PathView}).
 */
public final class PathFollower implements AutoCloseable {
    /** What the follower hears, on ZooKeeper's event thread: it must not block. */
    public interface Listener {
        /** The queue may have changed, or was read anew: look at {@link #head()}. */
        void changed();

        /** The view cannot be used on this path any more: follow it some other way. */
        void unusable();
    }

    /** The queue's head as a live view holds it: {@code first} is empty when the queue is. */
    public record Head(Optional<SequenceNode> first) {}

    private final PathView view;
    private final Member member;
    private final AtomicBoolean closed = new AtomicBoolean();

    private PathFollower(PathView view, Listener listener) {
        this.view = view;
        this.member = new Member(listener);
    }

    /**
     * Follows {@code path}; empty if the client uses no views, or its view of the path is unusable. A client that
     * stopped taking views because a server before 3.9 refused to remove one still follows through a view it has of
     * the path: on such a server the exists watch an observer sets on a missing path would share the server's entry
     * with the view's watch there, and its firing, or its removal, would end that watch too.
     */
    public static Optional<PathFollower> follow(CuratorFramework client, String path, Listener listener) {
        ClientContext context = ClientContext.of(client);
        PathView view = context.usesViews()
                ? context.retainView(path)
                : context.server().persistentWatchesStay() ? context.retainExistingView(path) : null;
        if (view == null) {
            return Optional.empty();
        }
        PathFollower follower = new PathFollower(view, listener);
        List<Runnable> todo = new ArrayList<>(2);
        if (!view.join(follower.member, todo)) {
            view.release();
            return Optional.empty();
        }
        todo.forEach(Runnable::run);
        return Optional.of(follower);
    }

    /**
     * What the view knows of the queue's head: empty while it knows nothing (the connection is down, or the path is
     * being read again), else the lowest sequence node, if there is one.
     */
    public Optional<Head> head() {
        return view.head();
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            view.quit(member, List.of(), null);
            view.release();
        }
    }

    /** Passes the view's news on while the follower is open. */
    private final class Member implements PathView.ChangeListener {
        private final Listener listener;

        Member(Listener listener) {
            this.listener = listener;
        }

        @Override
        public void viewRead() {
            if (!closed.get()) {
                listener.changed();
            }
        }

        @Override
        public void viewChanged() {
            if (!closed.get()) {
                listener.changed();
            }
        }

        @Override
        public void viewUnusable(PathView.Unusable why) {
            if (!closed.get()) {
                listener.unusable();
            }
        }
    }
}
