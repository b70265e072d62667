"""A small corpus of eight realistic documents and paraphrased questions whose answer sentences are known."""

from __future__ import annotations

# Eight documents of six pages each (about 170 words a page, each page about one chunk), so the
# corpus holds some fifty chunks and most questions have near neighbours in their own document: a search
# that only found the right document, not the right passage, would miss the 90% recall it must reach.
CORPUS: dict[str, list[str]] = {
    "employee-handbook.pdf": [
        "Working Hours\n\nCore hours at Northwind run from 10:00 to 15:00, and outside them employees "
        "arrange their day with their team lead. The standard working week is 38 hours for full-time staff, "
        "recorded in the time tracking tool by Friday evening of each week. Overtime must be approved in "
        "advance by a manager and is compensated with time off at one and a half times the hours worked. "
        "Night work is only allowed in the data centre team, which runs its own rota and pays a shift "
        "allowance. Breaks of at least thirty minutes are required for any day longer than six hours.\n\n"
        "Remote Work\n\nStaff may work from home up to three days a week once they have completed their "
        "probation period. Teams agree on one shared office day so that planning meetings happen in person. "
        "Employees who work remotely must use the company VPN whenever they access internal systems. The "
        "company provides a monitor and a chair for a home office on request, and the equipment remains "
        "company property. Working from another country is possible for up to four weeks a year, subject to "
        "a tax and insurance check by the people team.",
        "Annual Leave\n\nFull-time employees receive 26 days of paid annual leave, plus public holidays. "
        "Part-time employees receive the same entitlement in proportion to their contracted hours. Unused "
        "annual leave of up to five days may be carried over into the first quarter of the next year; the "
        "rest lapses on 31 December. Leave requests longer than two weeks need the approval of the "
        "department head and should be made at least a month in advance. During the last two weeks of "
        "December the offices close and three days of leave are reserved for the shutdown.\n\nSickness and "
        "Family\n\nEmployees who are ill must notify their manager before 9:30 on the first day of absence. "
        "A doctor's certificate is required when a sickness absence lasts longer than three consecutive "
        "working days. Salary continues in full for up to six weeks of illness in any twelve-month period. "
        "Parents receive sixteen weeks of fully paid parental leave, which can be taken at any time during "
        "the child's first two years. Employees caring for a seriously ill relative may take up to ten days "
        "of paid carer's leave each year.",
        "Expenses\n\nTravel expenses must be submitted through the finance portal within thirty days, with "
        "receipts attached. Economy class is the rule for flights shorter than six hours; longer flights may "
        "be booked in premium economy. Hotel costs are reimbursed up to the city rates published by the "
        "finance team, and a daily meal allowance applies instead of restaurant receipts. Rail travel is "
        "preferred over flying for journeys under four hours.\n\nConduct and Training\n\nGifts from "
        "suppliers worth more than fifty euros must be declared to the compliance officer. Employees may not "
        "take part in the selection of a supplier in which they or a family member hold an interest. The "
        "company pays for one professional training course per employee each year, up to 1,500 euros. "
        "Conference attendance counts towards this budget unless the employee is presenting. Every employee "
        "completes the online code of conduct course in their first month and again every two years.",
        "Probation and Reviews\n\nNew employees serve a probation period of six months, during which either "
        "side may end the contract with two weeks' notice. At the end of probation the manager holds a "
        "review meeting and confirms the appointment in writing. Performance reviews take place twice a "
        "year, in March and September, and cover goals, feedback from colleagues and development plans. "
        "Salary increases are decided once a year after the spring review and take effect in April.\n\n"
        "Benefits\n\nThe company contributes five percent of salary to the pension plan and matches "
        "employee contributions up to a further three percent. Private health insurance covers employees "
        "and their children; partners can be added at a reduced rate. A public transport pass or a bicycle "
        "lease is offered to every employee as a tax-free benefit. Lunch in the staff canteen is subsidised "
        "by half.",
        "Workplace and Safety\n\nThe office is open from 7:00 to 21:00 on working days; access outside these "
        "hours needs the facility manager's approval. Desks are not assigned: employees book a desk in the "
        "app the day before. Every floor has a trained first aider, whose name is posted next to the lift. "
        "Fire drills are held twice a year and everyone must leave the building when the alarm sounds. "
        "Accidents at work, however minor, are recorded in the accident book at reception.\n\nEquality\n\n"
        "Northwind does not tolerate discrimination or harassment of any kind. Concerns can be raised with "
        "a manager, the people team or, anonymously, through the whistleblowing line run by an outside "
        "provider. Every report is investigated and the person who raised it is protected from retaliation.",
        "Leaving the Company\n\nThe notice period is one month during the first two years of employment and "
        "three months after that, unless the contract says otherwise. Resignations must be given in writing "
        "to the manager and copied to the people team. Remaining annual leave is normally taken during the "
        "notice period; leave that cannot be taken is paid out with the final salary. On the last day the "
        "employee returns the laptop, badge and any other company property to the service desk. An exit "
        "interview is offered to everyone who leaves, and its answers are reported only in aggregate.\n\n"
        "References\n\nThe people team issues a written reference on request, stating the dates of "
        "employment, the role and, if the employee wishes, an assessment of performance.",
    ],
    "aquapure-300-manual.pdf": [
        "Installation\n\nBefore installing the AquaPure 300, close the cold water supply valve under the "
        "sink and open the tap to release pressure. Mount the bracket on the cabinet wall with the two "
        "screws supplied, leaving at least eight centimetres below the unit so the cartridge can be removed. "
        "Connect the inlet hose to the cold water line with the adapter in the box; never connect the unit "
        "to the hot water line, since water above 38 degrees damages the membrane. The unit needs a minimum "
        "water pressure of 1.5 bar and a maximum of 6 bar to operate correctly. Where the mains pressure is "
        "higher, fit the optional pressure reducer between the valve and the inlet hose.\n\nFirst Use\n\n"
        "Flush a new cartridge for five minutes before drinking the water, to remove carbon fines. The water "
        "may look cloudy at first because of trapped air, which clears within a minute. Check every "
        "connection for drips during the first hour of use and tighten them by hand if needed. The separate "
        "tap delivers filtered water only; the mixer tap continues to supply unfiltered water.",
        "Changing the Cartridge\n\nReplace the filter cartridge every six months or after 2,000 litres, "
        "whichever comes first. Close the supply valve and place a towel under the unit before you begin. "
        "Turn the old cartridge a quarter turn to the left and pull it straight down. Insert the new "
        "cartridge, push it up firmly and turn it a quarter turn to the right until it clicks. Used "
        "cartridges can be returned to any dealer for recycling. Only genuine AquaPure cartridges are "
        "certified to remove lead and chlorine.\n\nStatus Light\n\nThe indicator light turns amber when the "
        "cartridge has ten percent of its capacity left and red when it is exhausted. A flashing blue light "
        "means the unit has detected a leak and closed its internal valve. Hold the reset button for five "
        "seconds after fitting a new cartridge, until the light shows green. The light is powered by a "
        "coin battery that lasts about five years.\n\nCare\n\nClean the outer housing with a soft cloth and "
        "mild soap; never use solvents or bleach. Keep the unit away from direct sunlight, which encourages "
        "algae in the transparent bowl.",
        "Troubleshooting\n\nIf the flow rate drops sharply, check that the inlet hose is not kinked before "
        "replacing the cartridge. A dripping connection usually means the O-ring is not seated; remove the "
        "cartridge, moisten the O-ring and refit it. A humming noise is normal while the tank refills and "
        "stops once it is full. If the water tastes of chlorine, the cartridge is exhausted or was not "
        "flushed after fitting. If no water comes out at all, check that the supply valve is open and the "
        "blue leak light is off.\n\nWarranty\n\nThe AquaPure 300 is covered by a two-year warranty that "
        "excludes cartridges and damage from frost. Keep the receipt, since the dealer needs it for any "
        "claim. Registering the product online extends the warranty on the housing by one year. Repairs "
        "under warranty are carried out by authorised service partners only; opening the housing yourself "
        "voids the warranty.\n\nTechnical Data\n\nFlow rate 2.5 litres per minute. Operating temperature "
        "4 to 38 degrees. Dimensions 36 by 12 by 12 centimetres. Weight 2.1 kilograms.",
        "Safety Instructions\n\nRead all instructions before installing and using the unit, and keep this "
        "manual for future reference. The AquaPure 300 is intended for use with municipal drinking water "
        "only; do not use it with water of unknown quality or from a private well without testing it first. "
        "Do not install the unit where it can freeze, in direct sunlight or next to a heat source. Children "
        "should not play with the unit or the packaging. If the supply pipes are old or corroded, ask a "
        "plumber to check them before installation.\n\nWhat Is in the Box\n\nThe box contains the filter "
        "head with the status light, one cartridge, a wall bracket with two screws, a two metre inlet hose, "
        "a tap adapter, a separate drinking water tap and this manual. Check that nothing is missing before "
        "you start.",
        "How the Filter Works\n\nWater passes first through a sediment layer that holds back sand and rust, "
        "then through a block of activated carbon that removes chlorine, odours and many pesticides. A final "
        "ion exchange stage reduces lead and copper from old pipes. Minerals such as calcium and magnesium "
        "are largely kept in the water, so the taste stays natural. The filter does not soften water and "
        "does not remove bacteria or viruses; where the water may be contaminated, boil it as advised by the "
        "local authority.\n\nWater Hardness\n\nIn very hard water areas the cartridge may need replacing "
        "sooner, because limescale can block the sediment layer. A hardness test strip is included with "
        "every replacement cartridge.",
        "Holidays and Long Breaks\n\nIf you are away for more than a week, close the supply valve. On your "
        "return, open the valve and let the water run for two minutes before drinking it, because water "
        "that stood in the cartridge can taste stale. After more than four weeks without use, replace the "
        "cartridge.\n\nOrdering Parts\n\nReplacement cartridges, O-rings and hoses can be ordered from any "
        "dealer or from the online shop, quoting the model number printed under the filter head. A "
        "subscription delivers a new cartridge every six months at a reduced price.\n\nDisposal\n\nAt the "
        "end of its life the filter head must be taken to a collection point for electronic waste, because "
        "it contains a battery and a circuit board.",
    ],
    "helix-annual-report-2023.pdf": [
        "Highlights of the Year\n\nGroup revenue rose to 412 million euros in 2023, an increase of 8 "
        "percent on the previous year. Growth came from price increases in contract logistics and from the "
        "cold chain business, while parcel volumes were weaker. Operating margin narrowed to 6.1 percent "
        "because fuel and wage costs rose faster than prices. Net profit was 17.8 million euros, compared "
        "with 19.4 million euros in 2022. Headcount grew to 3,950 employees across eleven countries, most "
        "of them in warehouse operations.\n\nShareholder Returns\n\nThe board proposes a dividend of 0.42 "
        "euros per share, payable in May. This is a payout ratio of about 45 percent of net profit, within "
        "the policy range of 40 to 50 percent. The share buyback announced in 2022 was completed in "
        "September, with 1.2 million shares repurchased and cancelled. The share price ended the year 11 "
        "percent higher, ahead of the sector index.\n\nSustainability\n\nEmissions per parcel delivered "
        "fell by 9 percent, mainly because of the electric vans introduced in city centres.",
        "Cold Chain\n\nThe cold chain division grew fastest, with revenue up 19 percent on new "
        "pharmaceutical contracts. Two refrigerated hubs opened in Lyon and Milan during the spring, adding "
        "40,000 pallet places kept between two and eight degrees. The division's margin of 9.4 percent is "
        "the highest in the group, reflecting the specialist handling that customers pay for.\n\nParcels "
        "\n\nParcel volumes in the domestic network fell by 3 percent as online retail demand cooled. "
        "Revenue per parcel rose by 5 percent after the surcharge for oversized items was introduced. The "
        "sorting centre in Utrecht was automated, cutting the cost of handling a parcel by a fifth.\n\n"
        "Contract Logistics and Warehousing\n\nThe warehouse in Rotterdam reached full capacity in October, "
        "and a second site will open in 2025. Contract logistics renewed all of its five largest customers, "
        "two of them for seven years. Revenue in the segment rose 6 percent, in line with the market.",
        "Financial Position\n\nNet debt stood at 138 million euros at year end, or 1.9 times EBITDA. The "
        "revolving credit facility of 150 million euros was extended to 2028 at an unchanged margin. Capital "
        "expenditure of 55 million euros went mainly into electric delivery vans and warehouse automation. "
        "Cash flow from operations was 61 million euros, and working capital improved as customers paid "
        "faster. Equity rose to 204 million euros after the profit for the year.\n\nOutlook\n\nFor 2024 "
        "management expects revenue growth of 4 to 6 percent and a stable margin. Risks include a further "
        "rise in energy prices, a shortage of drivers and weaker demand in the German market. Capital "
        "expenditure is planned at about 60 million euros, a third of it for the second Rotterdam "
        "warehouse. The group aims to reduce net debt below 1.5 times EBITDA by the end of 2025.",
        "Letter from the Chief Executive\n\nDear shareholders, 2023 tested our network more than any year "
        "since the pandemic. Customers held back orders in the first half, fuel prices stayed high and our "
        "drivers rightly asked for higher wages. Our people responded with remarkable commitment, and we "
        "ended the year with record revenue and a stronger customer base. We invested in the things that "
        "will matter for the next decade: clean vehicles, automated sorting and specialist cold storage. I "
        "want to thank every colleague for their work and our customers for their trust.\n\nStrategy\n\n"
        "Our strategy rests on three priorities: grow in specialist logistics where margins are higher, "
        "make the parcel network more efficient through automation, and halve our emissions by 2030.",
        "People\n\nEmployee turnover fell from 21 percent to 16 percent, helped by the new pay agreement "
        "with the drivers' union. We trained 420 warehouse staff to operate the automated systems in Utrecht "
        "and Rotterdam. The number of lost-time accidents per million hours worked fell to 4.2, the lowest "
        "in the group's history. Women now hold 31 percent of management positions, against a target of 35 "
        "percent by 2026.\n\nEnvironment\n\nThe fleet now includes 640 electric vans, a quarter of all "
        "delivery vehicles. Solar panels on six warehouse roofs produced 9 gigawatt hours of electricity, "
        "about a fifth of the group's own use. Scope 1 and 2 emissions fell by 12 percent in absolute terms.",
        "Governance\n\nThe board met nine times during the year, with full attendance at all but one "
        "meeting. Two new independent directors joined in June, bringing experience in pharmaceuticals and "
        "in digital platforms. The audit committee reviewed the controls over revenue recognition and "
        "found no material weaknesses. The remuneration of the executive board is linked for one fifth to "
        "emission targets.\n\nAuditor\n\nThe shareholders' meeting reappointed the external auditor for the "
        "financial year 2024. Audit fees amounted to 0.9 million euros, and fees for other services to 0.1 "
        "million euros.\n\nFinancial Calendar\n\nThe shareholders' meeting takes place on 25 April, and the "
        "half-year results are published on 1 August.",
    ],
    "residential-lease.pdf": [
        "Term and Rent\n\nThis agreement is made between Marta Silva, the landlord, and Jonas Weber, the "
        "tenant, for the apartment at Rua das Flores 12, third floor. The tenancy begins on 1 March 2024 "
        "and runs for a fixed term of twelve months. The monthly rent is 1,250 euros, payable in advance on "
        "or before the third day of each month. Rent is paid by bank transfer to the account named in the "
        "schedule; cash is not accepted. A late payment fee of 25 euros applies to any rent received more "
        "than five days after the due date. The rent may be increased once a year, by no more than the "
        "consumer price index, with two months' notice.\n\nUtilities\n\nThe rent includes water and "
        "building insurance. The tenant pays electricity, gas and internet directly to the suppliers and "
        "must transfer the contracts into their own name within two weeks of moving in. Service charges for "
        "the lift and cleaning of common areas are included in the rent.",
        "Security Deposit\n\nThe tenant pays a security deposit equal to two months' rent, held in a "
        "separate escrow account. The deposit may not be used by the tenant as payment of the last months' "
        "rent. The landlord returns the deposit within thirty days of the end of the tenancy, less the cost "
        "of any damage beyond normal wear. Any deduction must be itemised in writing with receipts or "
        "quotes.\n\nInventory\n\nAn inventory of the furniture and the condition of each room is signed by "
        "both parties on the day the keys are handed over, and photographs are attached to it.\n\nRepairs "
        "\n\nThe tenant is responsible for replacing light bulbs and smoke alarm batteries. The tenant must "
        "report any damage or defect to the landlord promptly and allow access for repairs with 24 hours' "
        "notice, except in an emergency. The landlord must repair the heating, plumbing and electrical "
        "systems within a reasonable time after being notified. The tenant may not make alterations, paint "
        "walls or drill into tiles without written permission.",
        "Ending the Tenancy\n\nEither party may end the tenancy after the fixed term by giving two months' "
        "written notice. If nobody gives notice, the tenancy continues from month to month on the same "
        "terms. The tenant may end the tenancy during the fixed term only by finding a replacement tenant "
        "acceptable to the landlord. At the end of the tenancy the property must be returned clean, with "
        "all keys, and the meters are read in the presence of both parties.\n\nHouse Rules\n\nNo pets may "
        "be kept in the property without the landlord's prior written consent. Subletting all or part of "
        "the property is not permitted. Quiet hours in the building are from 22:00 to 7:00. Bicycles are "
        "stored in the basement room, not in the stairwell. Smoking is not allowed inside the apartment or "
        "on the shared roof terrace.\n\nSignatures\n\nSigned in two copies, one for each party, in Lisbon "
        "on 12 February 2024.",
        "Parties and Property\n\nThe property is let furnished, as described in the inventory, together with "
        "the use of storage cellar number 4 and one parking space in the courtyard. The tenant may use the "
        "property only as a private residence for themselves and their household, which consists of two "
        "adults. Running a business from the property is allowed only where no customers visit and no "
        "goods are stored. The landlord keeps a set of keys and will enter the property only with the "
        "tenant's agreement, except in an emergency.\n\nInsurance\n\nThe landlord insures the building. The "
        "tenant is advised to take out contents insurance and must hold liability insurance covering damage "
        "they cause to the property or to neighbours.",
        "Use of the Property\n\nThe tenant must keep the property clean, heated and aired to prevent damp "
        "and mould. Washing may not be hung out on the front balcony. The tenant takes part in the cleaning "
        "rota for the stairs and the pavement in winter, as posted in the entrance hall. Rubbish is sorted "
        "and left in the bins in the courtyard on the collection days set by the city. Barbecues on the "
        "balcony are allowed with an electric grill only.\n\nGarden\n\nThe shared garden may be used by all "
        "tenants. Children's toys and garden furniture must be put away in the evening. The landlord pays "
        "for the gardener who cuts the grass and trims the hedges twice a month between April and "
        "October.",
        "Disputes\n\nThe parties will first try to settle any disagreement about this agreement by talking "
        "to each other. If that fails, either party may ask the municipal rental commission for a "
        "non-binding opinion before going to court. The courts of Lisbon have jurisdiction.\n\nNotices\n\n"
        "Notices under this agreement must be in writing and sent by registered letter or by email to the "
        "addresses in the schedule. A notice sent by email counts as received on the next working day. "
        "Each party must tell the other of a change of address without delay.\n\nWhole Agreement\n\nThis "
        "document and its schedule form the whole agreement. Changes are valid only if made in writing and "
        "signed by both parties. If one clause is invalid, the others remain in force.",
    ],
    "weeknight-recipes.pdf": [
        "Roasted Tomato Soup\n\nServes four and takes about forty five minutes, most of it in the oven. Cut "
        "one kilogram of ripe tomatoes in half and lay them cut side up on a tray with a sliced onion. "
        "Drizzle with olive oil and sprinkle with thyme. Roast the tomatoes with two garlic cloves at 200 "
        "degrees for twenty five minutes until the skins blister. Blend the roasted vegetables with the "
        "stock until smooth, then season with salt and a pinch of sugar. Serve with a swirl of cream and "
        "toasted bread. The soup freezes well for up to two months.\n\nA Note on Stock\n\nA good vegetable "
        "stock makes the difference: simmer onion, carrot and celery for forty minutes and strain it. Keep "
        "the peelings of the week in a bag in the freezer and use them for stock. A stock cube will do on a "
        "busy evening, but use half the salt the recipe suggests.",
        "Mushroom Risotto\n\nServes two. Soak a handful of dried porcini in warm water for twenty minutes "
        "and keep the soaking liquid. Melt a knob of butter in a wide pan and soften a chopped shallot "
        "without letting it colour. Toast the arborio rice in the butter for two minutes before adding the "
        "first ladle of hot stock. A splash of white wine can go in before the stock; let it evaporate "
        "completely. Add the stock one ladle at a time, stirring often, and wait until it is absorbed before "
        "adding more. The rice is ready when it is creamy but still has a little bite, after about eighteen "
        "minutes.\n\nFinishing\n\nStir in the parmesan off the heat and let the risotto rest for two minutes "
        "before serving. Fry the fresh mushrooms separately in a hot pan so they brown instead of stewing, "
        "and spoon them over the top. Leftover risotto makes good fried rice cakes the next day.",
        "Banana Bread\n\nMakes one loaf of about ten slices. Use three very ripe bananas with brown spots, "
        "since they make the loaf sweeter and moister. Mash them with melted butter, brown sugar and one "
        "egg, then fold in the flour, baking soda and a pinch of salt. Do not overmix: stir only until no "
        "dry flour is visible. A handful of chopped walnuts or dark chocolate can be folded in last.\n\n"
        "Baking and Keeping\n\nLine a loaf tin with baking paper and heat the oven in good time. Bake the "
        "loaf at 175 degrees for about an hour, until a skewer inserted in the centre comes out clean. If "
        "the top browns too quickly, cover it loosely with foil for the last twenty minutes. Let it cool in "
        "the tin for ten minutes before turning it out. Wrapped in foil, the bread keeps for four days at "
        "room temperature or three months in the freezer. Toasted slices with butter make a quick "
        "breakfast.",
        "Introduction\n\nThese recipes are written for evenings when time is short and appetite is large. "
        "Most take less than forty minutes and use ingredients from an ordinary supermarket. Quantities "
        "serve four unless stated otherwise, and oven temperatures are for a conventional oven; reduce them "
        "by twenty degrees for a fan oven.\n\nThe Store Cupboard\n\nA well stocked cupboard saves many trips "
        "to the shop. Keep tinned tomatoes, chickpeas and coconut milk, dried pasta and rice, good olive "
        "oil, soy sauce and a few spices such as cumin, paprika and chilli flakes. Onions, garlic and lemons "
        "keep for weeks and start almost every recipe in this book.",
        "Chickpea Curry\n\nFry a chopped onion in oil until soft, then add garlic, ginger and two "
        "teaspoons of curry powder and cook for one minute. Pour in a tin of tomatoes and a tin of coconut "
        "milk and simmer for ten minutes. Add two tins of drained chickpeas and a bag of spinach and cook "
        "until the spinach wilts. Finish with lime juice and fresh coriander, and serve with rice or "
        "flatbread.\n\nLemon Pasta\n\nCook spaghetti in well salted water. Meanwhile warm butter with the "
        "zest and juice of a lemon and plenty of black pepper. Toss the drained pasta in the pan with a cup "
        "of the cooking water and grated parmesan until glossy. A handful of rocket adds colour and a "
        "peppery bite.",
        "Sheet Pan Chicken\n\nToss chicken thighs, potato wedges and red onion with olive oil, paprika and "
        "salt on a large tray. Roast at 220 degrees for thirty five minutes, turning the potatoes halfway, "
        "until the chicken skin is crisp. Add cherry tomatoes for the last ten minutes. Squeeze lemon over "
        "everything before serving.\n\nApple Crumble\n\nSlice four apples into a baking dish with a little "
        "sugar and cinnamon. Rub cold butter into flour and oats until the mixture looks like breadcrumbs, "
        "then stir in brown sugar. Scatter it over the fruit and bake at 180 degrees for thirty minutes, "
        "until golden and bubbling at the edges. Serve with custard or vanilla ice cream.",
    ],
    "lisbon-travel-guide.pdf": [
        "Getting Around\n\nLisbon is built on seven hills, and the old quarters are best explored on foot, "
        "with public transport for the steep climbs. Tram 28 climbs from Martim Moniz through the Alfama, "
        "but it is crowded, so board early in the morning. A rechargeable Viva Viagem card covers the "
        "metro, buses, trams and the ferries across the Tagus. The card itself costs fifty cents and can be "
        "topped up at any metro station. The historic funiculars count as trams but charge a higher fare "
        "when paid on board.\n\nArriving\n\nThe airport is connected to the city centre by the red metro "
        "line, a journey of about twenty minutes. Taxis from the airport rank charge a fixed supplement for "
        "luggage, and ride hailing apps pick up from the departures level. Trains to Sintra leave every "
        "twenty minutes from Rossio station and take forty minutes.",
        "Sights\n\nThe Jeronimos Monastery in Belem is closed on Mondays, and queues are shortest just after "
        "it opens. Combine it with the Belem Tower and the Monument to the Discoveries, all within a short "
        "walk along the river. The Sao Jorge Castle offers the classic view over the Baixa, but the "
        "entrance fee is high and the queue long at midday. From the Miradouro da Senhora do Monte you can "
        "see the castle, the river and most of the old town, free of charge. Many museums are free on "
        "Sunday mornings for residents only.\n\nFood\n\nPasteis de nata are best eaten warm, dusted with "
        "cinnamon and icing sugar. Grilled sardines are the dish of the June festivals, served on a slice of "
        "bread. The bread, olives and cheese placed on the table before a meal are not free: you pay for "
        "what you eat. Lunch is served from noon and dinner rarely before eight.",
        "Money and Manners\n\nCards are accepted almost everywhere, although small cafes may ask for cash "
        "for amounts under five euros. Tipping is not expected in Lisbon, but rounding up the bill by five "
        "to ten percent is appreciated in restaurants. Most shops close on Sunday afternoons, although "
        "shopping centres stay open until eleven at night. Pharmacies display the address of the nearest "
        "one open at night on their door.\n\nStaying Safe\n\nThe cobbled pavements get slippery after rain, "
        "so wear shoes with a good grip. Pickpockets work the busiest trams and viewpoints, so keep bags "
        "closed and in front of you. Anyone offering sunglasses or other goods in the Baixa at night is best "
        "ignored. The emergency number for police, fire and ambulance is 112.\n\nWhen to Go\n\nSpring and "
        "early autumn are the most pleasant seasons; in August many locals leave the city and some small "
        "restaurants close.",
        "Introduction\n\nLisbon is one of the oldest cities in western Europe, rebuilt after the great "
        "earthquake of 1755 that destroyed most of the lower town. Today it combines grand squares and "
        "avenues with steep medieval lanes, tiled facades and a busy riverfront. The city is compact, and "
        "most visitors find three or four days enough to see the main sights.\n\nNeighbourhoods\n\nThe "
        "Baixa is the flat grid of streets between the river and Rossio square, full of shops and cafes. "
        "The Alfama, below the castle, is a maze of alleys where fado music is sung in small restaurants. "
        "Bairro Alto comes alive late at night with bars, while Principe Real has gardens, antique shops and "
        "quieter restaurants.",
        "Day Trips\n\nSintra, in the hills west of the city, has romantic palaces and gardens; visit on a "
        "weekday, as weekends are very busy. Cascais is a seaside town with sandy beaches, reached by train "
        "along the coast in about forty minutes. Across the river, the beaches of the Costa da Caparica are "
        "popular with surfers and locals in summer. Evora, a walled town with a Roman temple, is ninety "
        "minutes away by bus or train.\n\nMusic and Nightlife\n\nFado performances usually begin after "
        "nine in the evening; many restaurants add a cover charge for the music. The bars of Bairro Alto "
        "sell drinks to take outside, and the streets fill with people on summer nights.",
        "Where to Stay\n\nThe Baixa and Chiado are the most convenient areas for a first visit, within "
        "walking distance of most sights. The Alfama has charming guesthouses but steep streets, which can "
        "be difficult with heavy luggage. Hotels along the Avenida da Liberdade are quieter and close to "
        "the metro. Book early for June, when the city celebrates its patron saint with street parties.\n\n"
        "Climate\n\nSummers are hot and dry, with afternoon temperatures often above thirty degrees. Winters "
        "are mild but rainy, and the Atlantic wind can make evenings feel cool even in summer, so bring a "
        "light jacket.\n\nLanguage\n\nPortuguese is the official language; English is widely spoken in "
        "hotels and restaurants, and a few words of Portuguese are always appreciated.",
    ],
    "information-security-policy.pdf": [
        "Passwords and Authentication\n\nThis policy applies to every employee, contractor and system of "
        "the company. Passwords must be at least fourteen characters long and must not be reused across "
        "systems. A password manager approved by the security team is provided to everyone and should be "
        "used to generate and store passwords. Passwords are changed only when there is reason to believe "
        "they have been exposed. Multi-factor authentication is mandatory for email, the VPN and every "
        "administrative console.\n\nAccess Control\n\nAccess is granted on the principle of least "
        "privilege: each person receives only the rights their role requires. Access rights are reviewed "
        "every quarter by each system owner and removed within one day when an employee leaves. Shared "
        "accounts are forbidden except for documented service accounts, whose credentials are kept in the "
        "vault. Administrative rights on laptops are granted for a limited time through the self-service "
        "portal.",
        "Devices\n\nOnly company-managed devices may connect to internal systems. Laptops must use full-disk "
        "encryption and lock automatically after five minutes of inactivity. Operating system updates are "
        "installed automatically and a device that misses them for two weeks loses network access. Lost or "
        "stolen devices must be reported to the service desk at once, so that they can be wiped remotely."
        "\n\nData Handling\n\nInformation is classified as public, internal, confidential or strictly "
        "confidential, and the owner of a document is responsible for its label. Confidential data may not "
        "be stored on personal USB drives or private cloud accounts. Strictly confidential data is sent "
        "outside the company only in encrypted form. Backups are taken nightly, kept for ninety days, and a "
        "restore is tested every month. Paper documents with confidential data are destroyed in the locked "
        "shredding bins.",
        "Incident Response\n\nSuspected security incidents must be reported to the security team within one "
        "hour of discovery. Examples include a lost laptop, a password typed into a suspicious site or "
        "unusual activity on an account. Phishing emails should be reported with the report button and then "
        "deleted, never forwarded. The security team decides within four hours whether a personal data "
        "breach must be notified to the supervisory authority.\n\nVulnerability Management\n\nAll systems "
        "are scanned for known vulnerabilities every week. Critical software vulnerabilities must be patched "
        "within seven days of a fix being released. Other vulnerabilities are patched in the monthly "
        "maintenance window. An exception needs the written approval of the chief information security "
        "officer and expires after ninety days.\n\nCompliance\n\nBreaches of this policy may lead to "
        "disciplinary action. The policy is reviewed every year.",
        "Purpose and Scope\n\nThis policy sets out how the company protects the confidentiality, integrity "
        "and availability of its information. It covers information in every form, whether held on "
        "computers, in the cloud or on paper, and every location where company work is done, including "
        "homes and public places. Suppliers who handle company data must meet equivalent requirements, "
        "which are written into their contracts.\n\nRoles\n\nThe chief information security officer owns "
        "this policy and reports on security risks to the board every quarter. System owners are "
        "responsible for the security of the systems they manage. Every employee is responsible for "
        "following this policy and for reporting anything that may put information at risk.",
        "Secure Development\n\nSource code is kept in the central repository, and every change is reviewed "
        "by a second developer before it is merged. Secrets such as passwords and keys may never be written "
        "into source code or configuration files; they are kept in the vault and read at run time. "
        "Automated tests and a dependency scan run on every change. Production data may not be copied into "
        "test environments unless it has been anonymised.\n\nSuppliers and Cloud Services\n\nNew cloud "
        "services must be approved by the security team before any company data is uploaded to them. "
        "Suppliers with access to confidential data are assessed before the contract is signed and again "
        "every two years.",
        "Physical Security\n\nOffices are protected by badge access, and visitors must sign in at reception "
        "and be accompanied at all times. Server rooms are open only to named staff, and every entry is "
        "logged. Screens in public areas must face away from windows and corridors. Clear desk rules apply "
        "at the end of each day: no confidential papers may be left on desks.\n\nTravel\n\nWhen travelling, "
        "keep laptops in hand luggage and never leave them unattended in a car. Use a privacy screen on "
        "trains and planes. Public Wi-Fi may be used only with the VPN switched on.\n\nAwareness\n\nEvery "
        "employee completes security awareness training when they join and every year afterwards, and "
        "simulated phishing tests are run each quarter.",
    ],
    "green-space-sleep-study.pdf": [
        "Background\n\nShort sleep is associated with cardiovascular disease, depression and weight gain, "
        "and city dwellers report sleeping less than people in rural areas. Green space may help by lowering "
        "noise and heat and by encouraging physical activity during the day.\n\nMethods\n\nWe followed "
        "4,812 adults in three European cities for two years to study how nearby green space affects sleep. "
        "Participants were recruited through their family doctors and were aged between 25 and 80 at the "
        "start. Exposure was measured as the share of vegetated land within 500 metres of each "
        "participant's home, from satellite images. Sleep duration and quality were recorded every three "
        "months with a standard questionnaire. Models were adjusted for age, sex, education, smoking and "
        "body mass index.",
        "Results\n\nThe mean sleep duration at baseline was six hours and fifty minutes. Participants in the "
        "highest quartile of green space slept on average 23 minutes longer per night than those in the "
        "lowest. They were also less likely to report waking during the night or feeling tired during the "
        "day. The association was strongest among people over sixty and weakest among night shift workers. "
        "Women and men showed similar effects.\n\nSensitivity Analyses\n\nAdjusting for income, noise and "
        "air pollution reduced the effect by about a third but did not remove it. Excluding participants who "
        "moved house during the study did not change the estimates. Using a 1,000 metre radius instead of "
        "500 metres gave weaker but similar associations. Tree canopy was more strongly related to sleep "
        "than grass.",
        "Limitations\n\nBecause sleep was self reported, the results may be affected by recall bias. The "
        "cities studied all have a temperate climate, so the findings may not apply to hot or very cold "
        "regions. We had no information on how often participants actually visited the green spaces near "
        "their homes. As in any observational study, unmeasured differences between neighbourhoods may "
        "explain part of the association.\n\nConclusions\n\nGreen space near the home is linked to longer "
        "sleep, independent of wealth. Urban planners could consider tree planting as a public health "
        "measure. Future work will use activity trackers worn on the wrist to measure sleep objectively and "
        "will test whether new parks change the sleep of people who live next to them.\n\nFunding\n\nThe "
        "study was funded by a national research council, which had no role in the analysis.",
        "Abstract\n\nWe examined whether the amount of vegetation around the home predicts how long and how "
        "well adults sleep. In a large prospective cohort, more green space was associated with longer sleep "
        "and fewer night-time awakenings, after accounting for individual and neighbourhood factors. The "
        "association was robust to several sensitivity analyses. These findings support the protection and "
        "expansion of urban green space as part of public health policy.\n\nKeywords\n\nSleep duration; "
        "urban green space; cohort study; environmental epidemiology; satellite imagery.",
        "Study Population\n\nOf 6,230 people invited, 5,104 agreed to take part, and 4,812 completed at "
        "least two questionnaires and were included in the analysis. Participants were slightly older and "
        "more educated than the general population of the three cities. The average follow-up time was 23 "
        "months, and 6 percent of participants were lost to follow-up.\n\nStatistical Analysis\n\nWe used "
        "linear mixed models with a random intercept for each participant to account for repeated measures. "
        "Green space was analysed both as a continuous variable and in quartiles. Missing covariates were "
        "handled by multiple imputation with twenty data sets. All analyses were carried out in R.",
        "Discussion\n\nOur results agree with earlier cross-sectional studies from Australia and North "
        "America, which found that people in greener areas report better sleep. Several mechanisms may "
        "explain the link: vegetation cools the air at night, absorbs noise and provides places for walking "
        "and exercise during the day. Exposure to daylight outdoors also helps to keep the body clock "
        "regular. The stronger effect among older adults may reflect that they spend more time near their "
        "homes.\n\nEthics\n\nThe study was approved by the ethics committees of the three participating "
        "universities, and all participants gave written informed consent.\n\nData Availability\n\nThe data "
        "are available from the authors on reasonable request.",
    ],
}

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
