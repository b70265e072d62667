"""Paraphrased questions about the retrieval corpus, each with the one sentence that answers it."""

from __future__ import annotations

# Each question paraphrases the one sentence of the corpus that answers it.
QUESTIONS: list[tuple[str, str]] = [
    (
        "How many days per week can I work remotely after probation?",
        "Staff may work from home up to three days a week once they have completed their probation period.",
    ),
    (
        "How is extra work beyond normal hours paid back?",
        "Overtime must be approved in advance by a manager and is compensated with time off at one and a "
        "half times the hours worked.",
    ),
    (
        "How much paid vacation do full-timers get each year?",
        "Full-time employees receive 26 days of paid annual leave, plus public holidays.",
    ),
    (
        "When do I need a medical note for being off sick?",
        "A doctor's certificate is required when a sickness absence lasts longer than three consecutive "
        "working days.",
    ),
    (
        "What's the deadline for claiming back travel costs?",
        "Travel expenses must be submitted through the finance portal within thirty days, with receipts "
        "attached.",
    ),
    (
        "What should I do with the water supply before fitting the filter?",
        "Before installing the AquaPure 300, close the cold water supply valve under the sink and open the "
        "tap to release pressure.",
    ),
    (
        "How often does the filter insert have to be swapped?",
        "Replace the filter cartridge every six months or after 2,000 litres, whichever comes first.",
    ),
    (
        "What does it mean when the status lamp turns orange?",
        "The indicator light turns amber when the cartridge has ten percent of its capacity left and red "
        "when it is exhausted.",
    ),
    (
        "The joint is leaking water, how do I fix it?",
        "A dripping connection usually means the O-ring is not seated; remove the cartridge, moisten the "
        "O-ring and refit it.",
    ),
    (
        "How long is the guarantee on the purifier and what does it not cover?",
        "The AquaPure 300 is covered by a two-year warranty that excludes cartridges and damage from frost.",
    ),
    (
        "By how much did the company's sales grow last year?",
        "Group revenue rose to 412 million euros in 2023, an increase of 8 percent on the previous year.",
    ),
    (
        "Why did profitability fall?",
        "Operating margin narrowed to 6.1 percent because fuel and wage costs rose faster than prices.",
    ),
    (
        "How much will investors receive for each share they own?",
        "The board proposes a dividend of 0.42 euros per share, payable in May.",
    ),
    (
        "Which business unit expanded the most?",
        "The cold chain division grew fastest, with revenue up 19 percent on new pharmaceutical contracts.",
    ),
    (
        "How indebted is the group relative to its earnings?",
        "Net debt stood at 138 million euros at year end, or 1.9 times EBITDA.",
    ),
    (
        "What sales growth is forecast for next year?",
        "For 2024 management expects revenue growth of 4 to 6 percent and a stable margin.",
    ),
    (
        "By what day of the month must the rent be paid?",
        "The monthly rent is 1,250 euros, payable in advance on or before the third day of each month.",
    ),
    (
        "How soon will I get my deposit back after moving out?",
        "The landlord returns the deposit within thirty days of the end of the tenancy, less the cost of "
        "any damage beyond normal wear.",
    ),
    (
        "How much warning must be given to terminate the rental contract?",
        "Either party may end the tenancy after the fixed term by giving two months' written notice.",
    ),
    (
        "Am I allowed to keep a dog in the flat?",
        "No pets may be kept in the property without the landlord's prior written consent.",
    ),
    (
        "How long do the tomatoes go in the oven for the soup?",
        "Roast the tomatoes with two garlic cloves at 200 degrees for twenty five minutes until the skins "
        "blister.",
    ),
    (
        "What do I do to the grains before pouring in the broth?",
        "Toast the arborio rice in the butter for two minutes before adding the first ladle of hot stock.",
    ),
    (
        "How can I tell the banana cake is baked through?",
        "Bake the loaf at 175 degrees for about an hour, until a skewer inserted in the centre comes out "
        "clean.",
    ),
    (
        "How long can the banana loaf be stored?",
        "Wrapped in foil, the bread keeps for four days at room temperature or three months in the freezer.",
    ),
    (
        "When is the best time to ride the famous old streetcar?",
        "Tram 28 climbs from Martim Moniz through the Alfama, but it is crowded, so board early in the "
        "morning.",
    ),
    (
        "Which ticket works on all public transport in the city?",
        "A rechargeable Viva Viagem card covers the metro, buses, trams and the ferries across the Tagus.",
    ),
    (
        "On which day can't I visit the monastery?",
        "The Jeronimos Monastery in Belem is closed on Mondays, and queues are shortest just after it opens.",
    ),
    (
        "Should I leave a gratuity when eating out?",
        "Tipping is not expected in Lisbon, but rounding up the bill by five to ten percent is appreciated "
        "in restaurants.",
    ),
    (
        "What is the minimum length of a login secret?",
        "Passwords must be at least fourteen characters long and must not be reused across systems.",
    ),
    (
        "How quickly is access revoked for someone who quits?",
        "Access rights are reviewed every quarter by each system owner and removed within one day when an "
        "employee leaves.",
    ),
    (
        "After how long idle must a notebook computer lock itself?",
        "Laptops must use full-disk encryption and lock automatically after five minutes of inactivity.",
    ),
    (
        "How long are backup copies retained?",
        "Backups are taken nightly, kept for ninety days, and a restore is tested every month.",
    ),
    (
        "How soon must a possible breach be raised with the security team?",
        "Suspected security incidents must be reported to the security team within one hour of discovery.",
    ),
    (
        "What is the deadline for installing urgent security fixes?",
        "Critical software vulnerabilities must be patched within seven days of a fix being released.",
    ),
    (
        "Where and for how long were the participants observed?",
        "We followed 4,812 adults in three European cities for two years to study how nearby green space "
        "affects sleep.",
    ),
    (
        "How much more did people living near the most parks sleep?",
        "Participants in the highest quartile of green space slept on average 23 minutes longer per night "
        "than those in the lowest.",
    ),
    (
        "Did controlling for confounders like traffic noise explain away the finding?",
        "Adjusting for income, noise and air pollution reduced the effect by about a third but did not "
        "remove it.",
    ),
    (
        "What is a weakness of how rest was measured?",
        "Because sleep was self reported, the results may be affected by recall bias.",
    ),
]
