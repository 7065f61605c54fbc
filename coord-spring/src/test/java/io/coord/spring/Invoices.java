package io.coord.spring;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The store of charged invoices that README's {@link Billing} service keeps in its database, here in memory. Its
 * look and its mark are two steps, as two statements of a database would be: only the lock keeps two instances from
 * both looking before either marks.
 */
final class Invoices {
    private final Set<String> charged = ConcurrentHashMap.newKeySet();

    boolean isCharged(String invoice) {
        return charged.contains(invoice);
    }

    void markCharged(String invoice) {
        charged.add(invoice);
    }
}
