package io.coord.spring;

import java.time.Duration;
import org.springframework.context.event.EventListener;
import org.springframework.integration.leader.event.OnGrantedEvent;
import org.springframework.integration.leader.event.OnRevokedEvent;
import org.springframework.integration.support.locks.LockRegistry;
import org.springframework.stereotype.Component;

/** The example of README's "Spring" section; {@link SpringReadmeExampleTest} runs it. */
// README: spring-billing begin
@Component
class Billing {
    private final LockRegistry locks; // a CoordLockRegistry: one ReentrantMutex per key under coord.lock.root
    private final Invoices invoices; // the service's database, shared by its instances
    private volatile long batchEpoch = -1; // >= 0 while this instance leads the nightly batch

    Billing(LockRegistry locks, Invoices invoices) {
        this.locks = locks;
        this.invoices = invoices;
    }

    /** Charges an invoice once, whichever instance of the service is asked, and however many at the same time. */
    boolean charge(String invoice) throws Exception {
        return locks.executeLocked(invoice, Duration.ofSeconds(5), () -> {
            if (invoices.isCharged(invoice)) {
                return false;
            }
            invoices.markCharged(invoice); // once the payment went through
            return true;
        });
    }

    @EventListener
    void onGranted(OnGrantedEvent event) {
        if (event.getRole().equals("billing-batch")) { // coord.leader.role
            batchEpoch = ((CoordLeaderInitiator.CoordContext) event.getContext()).fencingToken();
        }
    }

    @EventListener
    void onRevoked(OnRevokedEvent event) {
        if (event.getRole().equals("billing-batch")) {
            batchEpoch = -1;
        }
    }

    long batchEpoch() {
        return batchEpoch;
    }
}
// README: spring-billing end
