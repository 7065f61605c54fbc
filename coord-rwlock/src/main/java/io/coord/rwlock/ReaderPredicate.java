package io.coord.rwlock;

import io.coord.core.LeasePredicate;
import io.coord.core.SequenceNode;
import java.util.List;

/**
 * A reader is granted when no writer is queued before it, and waits on the nearest writer before it. Any node but a
 * reader's counts as a writer: one of another kind on the same path (Curator's {@code __WRIT__}, a mutex's
 * {@code lock-}) may hold a lock this reader cannot see through, so it is waited for rather than passed.
 */
final class ReaderPredicate implements LeasePredicate {
    static final ReaderPredicate INSTANCE = new ReaderPredicate();

    private ReaderPredicate() {}

    @Override
    public Decision evaluate(List<SequenceNode> children, int ourIndex) {
        for (int i = ourIndex - 1; i >= 0; i--) {
            if (!children.get(i).prefix().equals(ReadWriteMutex.READ_PREFIX)) {
                // Readers between that writer and us do not block us; the writer does, and the ones before it are
                // its business: once it is gone we look again.
                return Decision.waitFor(List.of(children.get(i)));
            }
        }
        return Decision.grant();
    }
}
