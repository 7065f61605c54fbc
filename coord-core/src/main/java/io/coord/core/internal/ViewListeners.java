package io.coord.core.internal;

import io.coord.core.SequenceNode;
import io.coord.core.internal.PathView.ChangeListener;
import io.coord.core.internal.PathView.NodeListener;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Who listens to what in one path's view: the listeners of single nodes (a waiter for the deletion of the nodes
 * before it, a holder for the deletion of its own nodes and for revocation requests written into them), and the
 * observers of every change.
 *
 * <p>Guarded by the view's lock. Nothing is told under it: each notification is added to the caller's {@code todo}.
 */
final class ViewListeners {
    private final Map<String, Set<NodeListener>> byNode = new HashMap<>();
    private final Set<ChangeListener> observers = new LinkedHashSet<>();

    void observe(ChangeListener observer) {
        observers.add(observer);
    }

    void stopObserving(ChangeListener observer) {
        observers.remove(observer);
    }

    void dropObservers() {
        observers.clear();
    }

    void listen(String name, NodeListener listener) {
        byNode.computeIfAbsent(name, k -> new LinkedHashSet<>(2)).add(listener);
    }

    void unlisten(String name, NodeListener listener) {
        Set<NodeListener> set = byNode.get(name);
        if (set != null && set.remove(listener) && set.isEmpty()) {
            byNode.remove(name);
        }
    }

    /** The names of the nodes somebody listens to. */
    Set<String> listened() {
        return byNode.keySet();
    }

    /** Tells the listeners of {@code node} that it is gone; they listen no more. */
    void deleted(SequenceNode node, List<Runnable> todo) {
        Set<NodeListener> set = byNode.remove(node.name());
        if (set != null) {
            todo.add(() -> set.forEach(l -> l.nodeDeleted(node)));
        }
    }

    /** Tells the listeners of child {@code name} that its data changed. */
    void dataChanged(String name, List<Runnable> todo) {
        Set<NodeListener> set = byNode.get(name);
        Optional<SequenceNode> node = SequenceNode.parse(name);
        if (set != null && node.isPresent()) {
            List<NodeListener> told = List.copyOf(set);
            todo.add(() -> told.forEach(l -> l.nodeDataChanged(node.get())));
        }
    }

    /** Tells the observers that the view changed. */
    void changed(List<Runnable> todo) {
        if (!observers.isEmpty()) {
            List<ChangeListener> told = List.copyOf(observers);
            todo.add(() -> told.forEach(ChangeListener::viewChanged));
        }
    }
}
