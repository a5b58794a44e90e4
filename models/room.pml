/*
 * Producers waiting for room in a full ring (runtime/waiters.c
 * accel__waiters_wait_room, runtime/waiters.h accel__waiters_room,
 * called by runtime/visit.c after each release of head).
 *
 * A ring of 4 is full (positions 0..3, all published); two producers
 * each want one more slot and wait for room. The op at position 0 waits
 * until one of those submits has returned (the regression test
 * room_waiter_woken_by_the_take_that_frees_a_slot): only the take of
 * position 0 frees a slot before it ends.
 *
 * Producer: if there is room, reserve (and publish) and return. Else read
 * the futex word `event`, raise the flag `room_waiters`, (cold fence)
 * look at the room again, futex_wait(event, ev) (returns at once if event
 * changed), retry.
 * Consumer, per take: head++ ([R2]), (hot fence) if the flag is raised,
 * exchange it to 0 and bump event (wake all). Then the op runs.
 * The fence pair is modelled as sequential consistency.
 *
 * Checked: at quiescence both producers returned (assertion on
 * `returned`) and every op ran.
 *
 * -DBROKEN_BATCHED: the code before the fix: room waiters are woken only
 *  every half ring of takes (head % 2 == 0) and when a visit ends. The
 *  take of position 0 wakes nobody, the op there waits for a producer
 *  that sleeps: Spin must reject it on `returned`.
 */
#define DEPTH 4
#define NPROD 2
#define TOTAL (DEPTH + NPROD)

byte head = 0;
byte tail = DEPTH;             /* full */
bit flag = 0;                  /* room_waiters */
byte event = 0;
byte returned = 0;

inline notify_room() {
    atomic {
        if
        :: flag -> flag = 0; event++
        :: else
        fi
    }
}

proctype producer()
{
    byte ev;
    do
    :: atomic { tail - head < DEPTH -> tail++ }; break   /* reserve */
    :: else ->
        ev = event;
        flag = 1;
        if                          /* after the cold fence */
        :: tail - head < DEPTH
        :: else ->
end_wait:   (event != ev)           /* futex_wait(event, ev) */
        fi
    od;
    returned++
}

proctype consumer()
{
end_idle:
    do
    :: head < tail ->
        head++;                     /* take, [R2] */
#ifdef BROKEN_BATCHED
        if
        :: head % 2 == 0 || head == tail -> notify_room()   /* half ring, visit end */
        :: else
        fi;
#else
        notify_room();
#endif
        if
        :: head == 1 -> (returned > 0)   /* the op waits for a producer */
        :: else
        fi
    od
}

init {
    atomic {
        run consumer();
        run producer();
        run producer()
    }
}

active proctype monitor()
{
    timeout -> assert(returned == NPROD && head == TOTAL)
}
