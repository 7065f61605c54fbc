package io.coord.spring;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
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
    private final Set<String> charged = ConcurrentHashMap.newKeySet();
    private volatile long batchEpoch = -1; // >= 0 while this instance leads the nightly batch

    Billing(LockRegistry locks) {
        this.locks = locks;
    }

    /** Charges an invoice once, whichever instance of the service is asked. */
    boolean charge(String invoice) throws Exception {
        return locks.executeLocked(invoice, Duration.ofSeconds(5), () -> charged.add(invoice));
    }

    @EventListener
    void onGranted(OnGrantedEvent event) { // coord.leader.role=billing-batch
        batchEpoch = ((CoordLeaderInitiator.CoordContext) event.getContext()).fencingToken();
    }

    @EventListener
    void onRevoked(OnRevokedEvent event) {
        batchEpoch = -1;
    }

    long batchEpoch() {
        return batchEpoch;
    }
}
// README: spring-billing end
